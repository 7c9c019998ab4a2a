"""``hermes dashboard`` as a real subprocess over a home of its own, agents on the loopback fake
provider; shared per module (a browser test drives one server through several pages)."""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.fake_provider import FakeProvider

REPO = Path(__file__).resolve().parents[2]
TOKEN = "dashboard-test-token-0123456789"
CONFIG = {"gateway": {"toolsets": ["terminal", "file", "todo", "memory", "skills", "cronjob"]}}


class DashboardProcess:
    def __init__(self, home: Path, provider: FakeProvider, token: str = TOKEN) -> None:
        self.home, self.token = home, token
        (home / "workspace").mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "API_SERVER_", "TELEGRAM_", "HERMES_"))}
        env.update(HERMES_HOME=str(home), OPENAI_BASE_URL=provider.base_url,
                   OPENAI_API_KEY="test-key", HERMES_MODEL="fake-model",
                   HERMES_DASHBOARD_TOKEN=token, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen([sys.executable, "-m", "hermes_cli.main", "dashboard",
                                      "--port", "0"], cwd=REPO, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lines: "queue.Queue[str]" = queue.Queue()
        self.stderr: list[str] = []
        out, err = self.proc.stdout, self.proc.stderr
        threading.Thread(target=lambda: [lines.put(x) for x in out], daemon=True).start()
        threading.Thread(target=lambda: [self.stderr.append(x) for x in err], daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=60)
            except queue.Empty:
                raise AssertionError("no READY line: " + "".join(self.stderr)) from None
            if line.startswith("READY"):
                break
        self.url = line.split("url=")[1].strip()  # .../dashboard/
        self.base = self.url[: -len("/dashboard/")]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture(scope="module")
def module_provider() -> Iterator[FakeProvider]:
    fp = FakeProvider().start()
    yield fp
    fp.stop()


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory, module_provider: FakeProvider
              ) -> Iterator[DashboardProcess]:
    home = tmp_path_factory.mktemp("dashboard-home")
    _seed_skill(home)
    proc = DashboardProcess(home, module_provider)
    yield proc
    proc.stop()


SKILL_V1 = """---
name: greeter
description: How to greet people
---
Say hello politely.
"""
SKILL_V2 = SKILL_V1.replace("Say hello politely.", "Shout HELLO.")


def _seed_skill(home: Path) -> None:
    """A skill with one saved version, so the page has something to revert."""
    from tools.skills.store import SkillStore

    old = os.environ.get("HERMES_HOME")
    os.environ["HERMES_HOME"] = str(home)
    try:
        store = SkillStore(home, None, actor="cli")
        store.create("greeter", SKILL_V1)
        store.edit("greeter", SKILL_V2)
    finally:
        if old is None:
            os.environ.pop("HERMES_HOME", None)
        else:
            os.environ["HERMES_HOME"] = old


def request(proc: DashboardProcess, method: str, path: str, body: Any = None,
            headers: dict[str, str] | None = None, token: str | None = "") -> tuple[int, Any]:
    import http.client
    import json
    from urllib.parse import urlsplit

    parts = urlsplit(proc.base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    hdrs = dict(headers or {})
    if token is not None:
        hdrs["Authorization"] = f"Bearer {token or proc.token}"
    data = None
    if body is not None:
        data = json.dumps(body)
        hdrs.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=data, headers=hdrs)
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, raw.decode(errors="replace")
