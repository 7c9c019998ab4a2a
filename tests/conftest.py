"""Shared fixtures.

- ``hermes_home`` (autouse): a fresh temp ``HERMES_HOME`` and an environment scrubbed of
  provider/gateway settings, so no test ever reads or writes the real ``~/.hermes``.
- ``fake_provider``: a started ``tests.fake_provider.FakeProvider``, stopped afterwards.
- ``fake_anthropic``: a started ``tests.fake_anthropic.FakeAnthropic`` (Messages API).
- ``pg_cluster`` (session): a throwaway PostgreSQL cluster (``tests/postgres.py``), skipped when
  PostgreSQL is not installed unless ``HERMES_REQUIRE_POSTGRES=1``; ``pg_url`` a fresh migrated
  database per test; ``store`` a SessionDB parametrised over ``sqlite`` and ``postgresql``: the
  store's contract suite runs once per backend.
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
    "HERMES_DATABASE_URL",
    "HERMES_PROFILE",
    "HERMES_PROFILE_ROOT",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEYS",
    "ANTHROPIC_API_KEYS",
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


@pytest.fixture(scope="session")
def pg_cluster():
    from tests import postgres

    bindir = postgres.find_bindir()
    if bindir is None:
        reason = "PostgreSQL is not installed (no initdb/pg_ctl; apt-get install postgresql-15)"
        if postgres.required():
            pytest.fail(reason + " and HERMES_REQUIRE_POSTGRES=1", pytrace=False)
        pytest.skip(reason)
    cluster = postgres.Cluster(bindir)
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A fresh, migrated database of the test cluster (its URL carries the password)."""
    return pg_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path: Path):
    """What a contract test opens: a SQLite file path, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("pg_url")


@pytest.fixture
def configured_store(store_url, monkeypatch: pytest.MonkeyPatch) -> str:
    """Parametrised like ``store``, through configuration: on PostgreSQL ``HERMES_DATABASE_URL``
    names the database, so ``SessionDB()`` (agents, child processes) opens it. Returns the backend."""
    if store_url is None:
        return "sqlite"
    monkeypatch.setenv("HERMES_DATABASE_URL", store_url)
    return "postgresql"


@pytest.fixture
def store_ref(store_url, tmp_path: Path) -> str:
    """The ``store`` fixture's location as a child process opens it: a path or a URL."""
    return store_url or str(tmp_path / "state.db")


@pytest.fixture
def store(store_url, tmp_path: Path):
    """A SessionDB on each backend in turn (the store's contract suite runs on both)."""
    from hermes_state import SessionDB

    db = SessionDB(tmp_path / "state.db") if store_url is None else SessionDB(url=store_url)
    try:
        yield db
    finally:
        db.close()


@pytest.fixture
def fake_anthropic():
    """A started ``tests.fake_anthropic.FakeAnthropic`` (the Messages API), stopped afterwards."""
    from tests.fake_anthropic import FakeAnthropic

    fa = FakeAnthropic().start()
    try:
        yield fa
    finally:
        fa.stop()


def _serving(fp: FakeProvider):
    fp.start()
    try:
        yield fp
    finally:
        fp.stop()


@pytest.fixture
def fake_provider():
    yield from _serving(FakeProvider())


@pytest.fixture
def aux_provider():
    """A second loopback OpenAI-compatible server, for what must not reach the main one (an
    auxiliary model, a fallback)."""
    yield from _serving(FakeProvider())


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
