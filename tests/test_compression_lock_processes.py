"""Two OS processes on one session and one state.db: the compression lock decides, nothing is lost."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hermes_state import SessionDB
from tests.conftest import write_config
from tests.fake_provider import estimate_prompt_tokens, overflow, slow, text
from tests.test_compression_e2e import SUMMARY, is_summary_request, seeded_session

ROOT = Path(__file__).resolve().parent.parent


def start_worker(sid: str, base_url: str, mode: str, message: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.lock_worker", "--session", sid, "--base-url", base_url,
                             "--mode", mode, "--message", message],
                            cwd=ROOT, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def outcome(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_two_processes_compress_at_once_exactly_one_wins(fake_provider, hermes_home):
    write_config(hermes_home, "model:\n  context_length: 16000\n")
    sid = seeded_session(40, size=1300)  # ~14k tokens: past the 7k threshold and the provider's 10k limit
    originals = [m["content"] for m in SessionDB().get_active_messages(sid)]

    def reply(body):
        if is_summary_request(body):
            return slow(text(SUMMARY), 4)  # the winner holds the lock this long
        n = estimate_prompt_tokens(body)
        return overflow(n, 10_000) if n > 10_000 else text("answered")

    fake_provider.handler = reply
    a = start_worker(sid, fake_provider.base_url, "turn", "message from A")
    b = start_worker(sid, fake_provider.base_url, "turn", "message from B")
    results = [outcome(a), outcome(b)]

    assert sum(r["compactions"] for r in results) == 1
    assert not any(r["compression_exhausted"] for r in results)
    winner = next(r for r in results if r["compactions"] == 1)
    loser = next(r for r in results if r["compactions"] == 0)
    assert winner["completed"] is True
    assert loser["completed"] is True or (loser["compression_deferred"] is True and loser["failed"] is False)
    if loser["compression_deferred"]:
        assert "compression is already running" in loser["final_response"].lower()

    db = SessionDB()
    stored = [r["content"] for r in db.get_messages(sid, include_inactive=True)]
    assert all(c in stored for c in originals)  # nothing lost
    assert stored.count("message from A") >= 1 and stored.count("message from B") >= 1
    active = [m["content"] for m in db.get_active_messages(sid) if m["role"] == "user"]
    assert len(active) == len(set(active))  # nothing duplicated in the live history
    assert db.get_compression_lock_holder(sid) is None  # released


def test_holder_killed_mid_summary_does_not_block_the_next_compaction(fake_provider, hermes_home, make_agent):
    sid = seeded_session(20, size=400)
    phase = {"slow": True}
    fake_provider.handler = lambda body: (slow(text(SUMMARY), 60) if phase["slow"] else text(SUMMARY)) \
        if is_summary_request(body) else text("ok")
    victim = start_worker(sid, fake_provider.base_url, "compress", "-")
    try:
        deadline = time.monotonic() + 60
        while not any(is_summary_request(b) for b in fake_provider.requests):
            assert time.monotonic() < deadline, "the worker never asked for a summary"
            time.sleep(0.05)
        holder = SessionDB().get_compression_lock_holder(sid)
        assert holder is not None and f"pid={victim.pid}:" in holder
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
    finally:
        if victim.poll() is None:
            victim.kill()
    phase["slow"] = False
    agent = make_agent(session_id=sid)
    out = agent.compress()
    assert out["deferred"] is False and out["compressed"] is True
    assert SessionDB().get_compression_lock_holder(sid) is None
