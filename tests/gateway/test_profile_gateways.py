"""Two profiles' gateways side by side (issue 25): `hermes -p NAME gateway run` serves from
HERMES_HOME/profiles/NAME (its own config, key, lock and sessions) while the other runs."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.request

from hermes_state import SessionDB
from tests.fake_provider import text
from tests.gateway.conftest import REPO, SESSION


def _start(name: str, env: dict) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "hermes_cli.main", "-p", name, "gateway", "run",
                             "--api-server", "--port", "0"], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    line = lines.get(timeout=90)
    assert line.startswith("READY"), line
    return proc, line.split("api=")[1].strip()


def _ask(api: str, key: str, content: str) -> dict:
    req = urllib.request.Request(api + "/v1/chat/completions", method="POST", data=json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": content}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}",
                 SESSION: f"chat-{content.split()[-1]}"})  # a stored session, not stateless
    with urllib.request.urlopen(req, timeout=90) as resp:
        return json.loads(resp.read())


def test_two_profiles_gateways_run_side_by_side(fake_provider, hermes_home):
    env = dict(os.environ, OPENAI_BASE_URL=fake_provider.base_url, OPENAI_API_KEY="test-key",
               HERMES_MODEL="fake-model", PYTHONPATH=str(REPO))
    procs = []
    try:
        for name in ("alpha", "beta"):
            folder = hermes_home / "profiles" / name
            folder.mkdir(parents=True)
            (folder / ".env").write_text(f"API_SERVER_KEY=key-{name}-0123456789abcdef\n")
            procs.append((name, *_start(name, env)))
        assert procs[0][2] != procs[1][2]
        fake_provider.default = text("pong")
        for name, _, api in procs:
            out = _ask(api, f"key-{name}-0123456789abcdef", f"ping {name}")
            assert out["choices"][0]["message"]["content"] == "pong"
        for name in ("alpha", "beta"):
            db = SessionDB(hermes_home / "profiles" / name / "state.db")
            stored = [m["content"] for s in db.list_sessions() for m in db.get_messages(s["id"])]
            db.close()
            assert f"ping {name}" in stored and not any("ping" in str(c) and name not in str(c)
                                                        for c in stored)
        assert not (hermes_home / "state.db").exists()
    finally:
        for _, proc, _ in procs:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
