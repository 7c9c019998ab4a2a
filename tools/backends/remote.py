"""What the SSH and Docker backends share: commands as bash scripts on the other side
(``remote_script``), run through a local client process (``ssh``, ``docker exec``) with the
terminal's bounds, a working directory kept between calls, and files moved with ``cat``.

A subclass says how to connect (``_connect``/``_disconnect``/``_alive``) and which local command
line runs a script over there (``shell_argv``). Killing the local client does not stop a remote
command, so a timeout or ``process kill`` also kills its process group over there (its pid is in
a file the script wrote).
"""
from __future__ import annotations

import logging
import secrets
import subprocess
import threading
from typing import Any, Optional

from tools.backends import remote_script
from tools.backends.base import Spawn
from tools.registry import ToolError

log = logging.getLogger("hermes.backends")
SSH_FAILED = 255  # the ssh client's exit status when the connection itself failed


class RemoteBackend:
    name = "remote"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._started = False
        self._cwd: Optional[str] = None
        self._home: Optional[str] = None

    # -- what a subclass provides

    def describe(self) -> str:
        raise NotImplementedError

    def shell_argv(self, script: str) -> list[str]:
        raise NotImplementedError

    def _connect(self) -> None:
        raise NotImplementedError

    def _disconnect(self) -> None:
        raise NotImplementedError

    def _alive(self) -> bool:
        raise NotImplementedError

    def _initial_cwd(self) -> Optional[str]:
        return None

    # -- the Backend protocol

    def start(self) -> None:
        """Connect (once; again after the connection died), then learn home and start dir."""
        with self._lock:
            if self._started and self._alive():
                return
            if self._started:
                self._disconnect()
            self._connect()
            self._started = True
            done = self.capture('printf %s "$HOME"', timeout=30)
            self._home = done.stdout.decode("utf-8", "replace").strip() or "/"
            if self._cwd is None:
                self._cwd = self._initial_cwd() or self._home

    def cwd(self, ctx: Any) -> str:
        self.start()
        return str(self._cwd)

    def home(self) -> str:
        self.start()
        return str(self._home)

    def run(self, command: str, ctx: Any, timeout: Optional[int], workdir: Optional[str]) -> dict:
        from tools.shell import command_env, command_limit, run_argv

        self.start()
        token = secrets.token_hex(8)
        script = remote_script.command_script(command, remote_script.join(str(self._cwd), workdir),
                                              token)
        result = run_argv(self.shell_argv(script), ctx, None, command_limit(ctx, timeout),
                          command_env(ctx), on_kill=lambda: self.kill(token))
        output, cwd = remote_script.split_marker(str(result.get("output") or ""), token)
        result["output"] = output
        if cwd and not workdir:
            self._cwd = cwd  # a `cd` carries over, as in a persistent shell
        if cwd is None and result.get("exit_code") == SSH_FAILED and self.name == "ssh":
            result["status"] = (f"the connection to {self.describe()} failed; the next call "
                                "reconnects")
            self._started = self._started and self._alive()
        return result

    def spawn(self, command: str, ctx: Any, workdir: Optional[str]) -> Spawn:
        from tools.shell import command_env

        self.start()
        token = secrets.token_hex(8)
        where = remote_script.join(str(self._cwd), workdir)
        script = remote_script.command_script(command, where, token, marker=False)
        return Spawn(self.shell_argv(script), None, command_env(ctx), lambda: self.kill(token),
                     [f"runs on {self.describe()} in {where}"])

    def stat(self, path: str) -> Optional[str]:
        done = self.capture(remote_script.stat_script(path))
        answer = done.stdout.decode("utf-8", "replace").strip()
        if done.returncode != 0 or answer not in ("dir", "file", "none"):
            raise OSError(f"cannot look at {path} on {self.describe()}: {_err(done)}")
        return None if answer == "none" else answer

    def read_bytes(self, path: str, limit: int) -> bytes:
        done = self.capture(remote_script.read_script(path, limit))
        if done.returncode != 0:
            raise OSError(f"cannot read {path} on {self.describe()}: {_err(done)}")
        return done.stdout

    def write_bytes(self, path: str, data: bytes) -> None:
        done = self.capture(remote_script.write_script(path), data=data)
        if done.returncode != 0:
            raise OSError(f"cannot write {path} on {self.describe()}: {_err(done)}")

    def close(self) -> None:
        with self._lock:
            if self._started:
                self._started = False
                self._disconnect()

    # -- helpers

    def capture(self, script: str, data: bytes = b"", timeout: float = 120) -> Any:
        """Run a short script over there and collect its bytes (file reads, writes, probes)."""
        self.start()
        try:
            return subprocess.run(self.shell_argv(script), input=data, capture_output=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ToolError(f"{self.describe()} did not answer within {timeout:.0f} s") from None
        except OSError as exc:
            raise ToolError(f"cannot reach {self.describe()}: {exc}") from None

    def kill(self, token: str) -> None:
        """Stop the remote process group of the command ``token`` names (TERM, then KILL)."""
        try:
            subprocess.run(self.shell_argv(remote_script.kill_script(token)), capture_output=True,
                           timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("could not stop a command on %s: %s", self.describe(), exc)


def _err(done: Any) -> str:
    text = (done.stderr or b"").decode("utf-8", "replace").strip()
    return text.splitlines()[-1] if text else f"exit status {done.returncode}"
