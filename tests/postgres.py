"""A throwaway PostgreSQL 15 cluster for the test session (``initdb`` + ``pg_ctl``).

Loopback only, a random free port, password authentication over TCP (so a wrong password can be
tested), durability off (a test cluster needs speed, not crash safety). Run as the ``postgres``
user when the tests run as root (PostgreSQL refuses to run as root). Each test gets a fresh
database copied from a migrated template (``CREATE DATABASE … TEMPLATE``: milliseconds).
Not installed: the tests that need it are skipped, unless ``HERMES_REQUIRE_POSTGRES=1`` (CI).
"""
from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

PASSWORD = "hermes-test-pw"
USER = "postgres"
TEMPLATE = "hermes_template"


def find_bindir() -> Optional[Path]:
    """Where ``initdb``/``pg_ctl`` live: PostgreSQL 15's Debian directory, else ``pg_config``."""
    candidates = [Path("/usr/lib/postgresql/15/bin")]
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            candidates.append(Path(out.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """One running cluster; ``new_database()`` hands out fresh migrated databases."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0
        self._counter = itertools.count(1)
        if self._as_postgres:
            shutil.chown(self.root, user="postgres", group="postgres")
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._as_postgres:
            shutil.chown(pwfile, user="postgres", group="postgres")
        self._run("initdb", "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}",
                  "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self.start()
        self._make_template()

    def _run(self, tool: str, *args: str) -> str:
        cmd = [str(self.bindir / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=self.root, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"{tool} failed ({out.returncode}): {out.stderr[-2000:]}")
        return out.stdout

    def _options(self) -> str:
        return (f"-c port={self.port} -c listen_addresses=127.0.0.1"
                f" -c unix_socket_directories={self.root} -c fsync=off -c synchronous_commit=off"
                " -c full_page_writes=off -c max_connections=300 -c shared_buffers=32MB")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60",
                  "-o", self._options(), "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self) -> None:
        """Stop (dropping every connection) and start again on the same port."""
        self.stop("fast")
        self.start()

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> None:
        import psycopg
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def _make_template(self) -> None:
        from hermes_state import SessionDB
        self.admin(f"CREATE DATABASE {TEMPLATE}")
        SessionDB(url=self.url(TEMPLATE)).close()

    def new_database(self, migrated: bool = True) -> str:
        """A fresh database's URL: a copy of the migrated template, or empty."""
        name = f"t{os.getpid()}_{next(self._counter)}"
        self.admin(f"CREATE DATABASE {name}" + (f" TEMPLATE {TEMPLATE}" if migrated else ""))
        return self.url(name)

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except (RuntimeError, subprocess.SubprocessError):
            pass
        shutil.rmtree(self.root, ignore_errors=True)


def required() -> bool:
    return os.environ.get("HERMES_REQUIRE_POSTGRES", "") == "1"


def terminate_backend(admin, pid: int, timeout: float = 30) -> None:
    """End a backend and wait until it (and every lock it held) is gone.

    ``pg_terminate_backend`` only signals the process; a test that checks the lock right after it
    races the backend's exit."""
    import time

    assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
    deadline = time.monotonic() + timeout
    while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                        (pid,)).fetchone()[0]:
        assert time.monotonic() < deadline, f"backend {pid} still alive after {timeout} s"
        time.sleep(0.02)


class StatementLog:
    """What the server ran for one database, from its own log: ``log_statement = all`` is set on
    the database (connections opened after this log), ``begin()`` marks where to start reading,
    ``sent()`` is every statement since, in order (a marker query brackets each end, so the
    lines are in the file when read)."""

    _MARK = "statement-log-mark"

    def __init__(self, cluster: Cluster, url: str) -> None:
        self.url, self.path = url, cluster.root / "log"
        cluster.admin(f"ALTER DATABASE {url.rsplit('/', 1)[1]} SET log_statement = 'all'")
        self._start = 0
        self.begin()

    def _mark(self) -> int:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"SELECT '{self._MARK}'")
        return self.path.stat().st_size

    def begin(self) -> None:
        self._start = self._mark()

    def sent(self) -> list[str]:
        return [text for _, text in self.executed()]

    def executed(self) -> list[tuple[str, str]]:
        """(how, statement) since ``begin()``: how is "statement" (simple protocol), "<unnamed>"
        (extended protocol, not prepared) or the name of the server-side prepared statement."""
        import re

        end = self._mark()
        text = self.path.read_bytes()[self._start:end].decode(errors="replace")
        found = (re.search(r"LOG:  (statement|execute ([^:]*)): (.*)", line)
                 for line in text.splitlines())
        return [(m.group(2) or m.group(1), m.group(3).strip()) for m in found
                if m and self._MARK not in m.group(3)]
