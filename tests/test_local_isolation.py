"""The embedded model runs in a child process of its own: its death or silence costs one request,
never the caller; the next request starts a fresh child (issue 19). Real model, real children,
real signals."""
from __future__ import annotations

import os
import platform
import signal
import threading
import time

import pytest

from agent.providers.local import LocalClient, LocalModelStopped, probe_local_model
from tests.local_model import cpu_ticks, model_children, needs_model, sigill_preload
from tests.waiting import wait_until

pytestmark = needs_model
STORY = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]


@pytest.fixture
def client() -> LocalClient:
    c = LocalClient(n_ctx=2048, timeout=30)  # a window of its own: a child of its own
    c.context_length  # started and warm
    yield c
    c.stop()


def test_the_model_runs_in_a_child_of_this_process(client):
    pid = client.worker_pid
    assert pid and pid != os.getpid()
    assert model_children(os.getpid()) and pid in model_children(os.getpid())


def test_a_child_killed_mid_stream_ends_that_request_and_the_next_one_restarts_it(client):
    first = client.worker_pid
    stream = client.chat.completions.create(messages=STORY, stream=True, max_tokens=400)
    next(stream)
    os.kill(first, signal.SIGKILL)
    with pytest.raises(LocalModelStopped) as exc:
        for _ in stream:
            pass
    msg = str(exc.value)
    assert "killed by SIGKILL" in msg and "restarted" in msg and "hermes setup" in msg
    resp = client.chat.completions.create(messages=[{"role": "user", "content": "Say hi"}],
                                          max_tokens=5)
    assert resp.choices[0].message.content is not None
    assert client.worker_pid not in (None, first)


def test_a_child_that_never_answers_is_killed_after_the_timeout(client):
    client.timeout = 2.0
    hung = client.worker_pid
    os.kill(hung, signal.SIGSTOP)  # alive, silent: a hang
    with pytest.raises(LocalModelStopped, match="no answer for 2 s"):
        client.chat.completions.create(messages=[{"role": "user", "content": "Hi"}], max_tokens=5)
    wait_until(lambda: not os.path.exists(f"/proc/{hung}") or _zombie(hung), timeout=10)
    client.timeout = 30.0
    resp = client.chat.completions.create(messages=[{"role": "user", "content": "Hi"}], max_tokens=5)
    assert resp.usage.completion_tokens >= 1


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_an_abandoned_stream_cancels_the_generation_and_keeps_the_child(client):
    pid = client.worker_pid
    stream = client.chat.completions.create(messages=STORY, stream=True, max_tokens=1000)
    next(stream)
    stream.close()  # the user pressed Ctrl+C: the child stops at its next token
    resp = client.chat.completions.create(messages=[{"role": "user", "content": "Say hi"}],
                                          max_tokens=3)
    assert resp.usage.completion_tokens <= 3
    assert client.worker_pid == pid


def test_abort_stops_a_non_streamed_request_at_the_next_token(client):
    out = {}

    def ask() -> None:
        out["resp"] = client.chat.completions.create(messages=STORY, max_tokens=2000,
                                                     temperature=0.8, seed=3)

    t = threading.Thread(target=ask)
    t.start()
    time.sleep(0.5)
    client.abort()
    t.join(60)
    assert not t.is_alive()
    assert out["resp"].usage.completion_tokens < 2000


def test_an_idle_child_costs_no_cpu(client):
    pid = client.worker_pid
    before = cpu_ticks(pid)
    time.sleep(2)
    assert cpu_ticks(pid) - before <= 2  # clock ticks (10 ms each): it sleeps on its socket


def test_an_agent_turn_whose_model_dies_fails_clearly_and_keeps_the_message(hermes_home):
    from hermes_state import SessionDB
    from run_agent import AIAgent

    agent = AIAgent(enabled_toolsets=[], quiet_mode=True)
    assert agent.provider == "local"
    first = agent.run_conversation("Say hello.")
    assert first["completed"], first
    os.kill(agent.client.worker_pid, signal.SIGSTOP)
    agent.client.timeout = 2.0
    res = agent.run_conversation("Tell me a story about the sea.")
    assert res["failed"] and not res["completed"]
    assert res["error"].startswith("The embedded model stopped: no answer for 2 s")
    assert "hermes setup" in res["error"] and res["api_calls"] == 1  # never retried
    with SessionDB() as db:
        stored = [m["content"] for m in db.get_messages(agent.session_id) if m["role"] == "user"]
    assert stored[-1] == "Tell me a story about the sea."
    agent.client.timeout = 60.0
    again = agent.run_conversation("Say hello again.")
    assert again["completed"] and again["final_response"], again


def test_probe_reports_a_working_build_and_its_cpu_features():
    ok, detail = probe_local_model()
    assert ok, detail
    assert "generated a token" in detail and "CPU features" in detail
    if platform.machine() in ("x86_64", "AMD64"):
        # the portable build: AVX2 baseline, nothing a newer CPU alone has
        features = detail.split("CPU features of this build:")[1]
        assert "AVX2" in features
        assert "AVX512" not in features and "AMX" not in features, detail


def test_probe_names_the_signal_that_killed_the_child(tmp_path, monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", sigill_preload(tmp_path))
    ok, detail = probe_local_model()
    assert not ok
    assert "killed by SIGILL" in detail and "illegal instruction" in detail
