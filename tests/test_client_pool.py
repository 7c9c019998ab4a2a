"""Provider clients lent by the process's pool: reused across agents, one request at a time, a client
whose request was cut never lent again, idle ones closed after a while."""
from __future__ import annotations

import threading

import run_agent
from agent.providers.client_pool import ClientPool, pool_for
from tests.fake_provider import slow, text


class Client:
    def __init__(self, n: int) -> None:
        self.n, self.closed = n, False

    def close(self) -> None:
        self.closed = True


def counting_pool(**kw) -> tuple[ClientPool, list[Client]]:
    made: list[Client] = []

    def make() -> Client:
        made.append(Client(len(made)))
        return made[-1]

    return ClientPool(make, **kw), made


def test_the_most_recently_returned_client_is_lent_first():
    pool, made = counting_pool()
    a, b = pool.borrow(), pool.borrow()
    assert (a.n, b.n) == (0, 1) and pool.idle == 0
    pool.give_back(a)
    pool.give_back(b)
    assert pool.borrow() is b and pool.borrow() is a and len(made) == 2


def test_a_cut_client_is_closed_not_lent_again():
    pool, made = counting_pool()
    a = pool.borrow()
    pool.give_back(a, reusable=False)
    assert a.closed and pool.idle == 0
    assert pool.borrow() is not a and len(made) == 2


def test_clients_idle_too_long_are_closed():
    now = [0.0]
    pool, made = counting_pool(idle_seconds=60, clock=lambda: now[0])
    old, fresh = pool.borrow(), pool.borrow()
    pool.give_back(old)
    now[0] = 61.0
    pool.give_back(fresh)  # returning one sweeps the stale ones
    assert old.closed and not fresh.closed and pool.idle == 1
    pool.close()
    assert fresh.closed and pool.idle == 0


def test_agents_of_one_endpoint_share_a_client_one_request_at_a_time(make_agent, fake_provider):
    pool = pool_for(run_agent.OpenAI, fake_provider.base_url, "test-key")
    first, second = make_agent(), make_agent()
    assert first.run_conversation("one")["completed"] and pool.idle == 1
    assert second.run_conversation("two")["completed"] and pool.idle == 1  # the same client served both

    both_in = threading.Barrier(3)
    fake_provider.handler = lambda body: (both_in.wait(10), None)[1]  # both on the wire at once
    threads = [threading.Thread(target=a.run_conversation, args=("together",)) for a in (first, second)]
    for t in threads:
        t.start()
    both_in.wait(10)
    for t in threads:
        t.join(10)
    assert pool.idle == 2  # a second client for the second request in flight, both kept afterwards


def test_an_interrupted_request_closes_its_borrowed_client(make_agent, fake_provider):
    pool = pool_for(run_agent.OpenAI, fake_provider.base_url, "test-key")
    agent = make_agent()
    assert agent.run_conversation("warm")["completed"]
    lent = pool.borrow()
    pool.give_back(lent)  # the client the next request will borrow
    fake_provider.queue(slow(text("too late"), 30))
    threading.Thread(target=lambda: fake_provider.wait_for_requests(2, 10) and agent.interrupt(),
                     daemon=True).start()
    assert agent.run_conversation("slow one")["interrupted"] is True
    assert lent.is_closed() and pool.idle == 0
    fake_provider.queue(text("next works"))
    assert agent.run_conversation("next")["final_response"] == "next works" and pool.idle == 1
