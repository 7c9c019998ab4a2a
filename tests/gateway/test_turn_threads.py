"""gateway.turn_threads: an executor whose submit() only queues (threads start off the event loop)."""
from __future__ import annotations

import asyncio
import threading

import pytest

from gateway.turn_threads import TurnThreads
from tests.waiting import wait_until


def test_results_and_exceptions_reach_the_future():
    pool = TurnThreads(4)
    assert pool.submit(lambda a, b=0: a + b, 2, b=3).result(5) == 5
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(5)
    pool.shutdown()


def test_at_most_max_workers_run_and_the_rest_wait_in_order():
    pool = TurnThreads(2)
    gate, started = threading.Event(), []

    def job(n: int) -> int:
        started.append(n)
        gate.wait(10)
        return n

    futures = [pool.submit(job, n) for n in range(5)]
    wait_until(lambda: len(started) == 2)
    assert pool.stats() == {"threads": 2, "idle": 0, "waiting": 3} and sorted(started) == [0, 1]
    gate.set()
    assert [f.result(10) for f in futures] == [0, 1, 2, 3, 4]
    assert pool.stats()["threads"] == 2
    pool.shutdown()


def test_every_queued_turn_gets_a_thread_up_to_the_limit():
    pool = TurnThreads(50)
    gate = threading.Event()
    futures = [pool.submit(gate.wait, 10) for _ in range(30)]
    wait_until(lambda: pool.stats()["threads"] == 30 and pool.stats()["waiting"] == 0)
    gate.set()
    assert all(f.result(10) for f in futures)
    wait_until(lambda: pool.stats()["idle"] == 30)  # kept for the next burst
    pool.shutdown()


def test_prestart_and_shutdown():
    pool = TurnThreads(8)
    pool.prestart(20)  # capped at max_workers
    wait_until(lambda: pool.stats() == {"threads": 8, "idle": 8, "waiting": 0})
    gate = threading.Event()
    running = [pool.submit(gate.wait, 10) for _ in range(8)]
    wait_until(lambda: pool.stats() == {"threads": 8, "idle": 0, "waiting": 0})
    queued = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(lambda: None)
    gate.set()
    assert all(f.result(10) for f in running)
    wait_until(lambda: pool.stats()["threads"] == 0)
    with pytest.raises(ValueError):
        TurnThreads(0)


def test_the_event_loop_runs_turns_on_it():
    pool = TurnThreads(3)

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        return await asyncio.gather(*(loop.run_in_executor(pool, lambda: threading.current_thread().name)
                                      for _ in range(6)))

    names = asyncio.run(main())
    assert len(names) == 6 and all(n.startswith("turn_") for n in names)
    pool.shutdown()
