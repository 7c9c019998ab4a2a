"""Shared fixtures.

- ``hermes_home`` (autouse): a fresh temp ``HERMES_HOME`` and an environment scrubbed of
  provider/gateway settings, so no test ever reads or writes the real ``~/.hermes``.
- ``fake_provider``: a started ``tests.fake_provider.FakeProvider``, stopped afterwards.
- An exception that escapes any background thread (``threading.excepthook``) while a test sets
  up, runs or tears down fails that test: a dead worker thread is a bug even when the main
  thread's assertions happen to pass.
"""

from __future__ import annotations

import os
import threading
import traceback
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider

_CLEARED_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "OPENROUTER_API_KEY",
    "HERMES_MODEL",
    "HERMES_PROVIDER",
    "GATEWAY_ALLOWED_USERS",
)
_CLEARED_PREFIXES = ("API_SERVER_", "TELEGRAM_")


def _fail_on_thread_exceptions():
    """Wrap one test phase: collect what reaches threading.excepthook, then fail with it."""
    caught: list[str] = []
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread is not None else "<unknown>"
        tb = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
        caught.append(f"exception in background thread {name!r}:\n{tb}")

    threading.excepthook = hook
    try:
        result = yield
    finally:
        threading.excepthook = previous
    if caught:
        pytest.fail("\n".join(caught), pytrace=False)
    return result


# trylast: innermost, so pytest's own per-phase hook (pytest 8) is saved and restored around ours
@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_setup(item):
    return (yield from _fail_on_thread_exceptions())


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item):
    return (yield from _fail_on_thread_exceptions())


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _fail_on_thread_exceptions())


@pytest.fixture(autouse=True)
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermes_home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in _CLEARED_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def fake_provider():
    fp = FakeProvider()
    fp.start()
    try:
        yield fp
    finally:
        fp.stop()


@pytest.fixture
def make_agent(fake_provider, tmp_path):
    """An ``AIAgent`` wired to the loopback provider; keyword arguments override the defaults."""
    from run_agent import AIAgent

    def make(**kw):
        kw.setdefault("base_url", fake_provider.base_url)
        kw.setdefault("api_key", "test-key")
        kw.setdefault("model", "fake-model")
        kw.setdefault("quiet_mode", True)
        kw.setdefault("skip_context_files", True)
        kw.setdefault("skip_memory", True)
        kw.setdefault("cwd", str(tmp_path))
        return AIAgent(**kw)

    return make


def write_config(home: Path, text: str) -> None:
    """Write ``HERMES_HOME/config.yaml`` (YAML text) for the agents a test builds next."""
    (home / "config.yaml").write_text(text)
