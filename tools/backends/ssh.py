"""The SSH backend: one persistent connection per session through OpenSSH's multiplexing.

A master connection (``ssh -M``) carries every command of the session over one authenticated
link, so a command costs a channel, not a handshake. Why the ``ssh`` binary and not a Python
SSH library: it reads the user's ``~/.ssh/config``, agent and keys exactly as their own ssh
does, and it adds no dependency. The master's remote side reads a pipe this process holds:
when Hermes dies, the pipe closes and the connection ends with it.

Host keys: known ones are trusted from ``~/.ssh/known_hosts``; a new host's key is recorded on
first contact in ``HERMES_HOME/known_hosts`` (trust on first use, like ``accept-new``), and a
changed key refuses the connection. Passwords are never asked (``BatchMode``): use a key.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from typing import Any, Optional

from tools.backends.remote import RemoteBackend
from tools.registry import ToolError

INSTALL_HINT = "apt-get install openssh-client"


class SSHBackend(RemoteBackend):
    name = "ssh"

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        if not getattr(cfg, "host", None):
            raise ToolError("terminal.backend is ssh but terminal.ssh.host is not set; set it with "
                            "`hermes config set terminal.ssh.host HOST` (and .user, .port, .key)")
        self.cfg = cfg
        self._dir: Optional[str] = None
        self._master: Optional[subprocess.Popen] = None

    def describe(self) -> str:
        user = f"{self.cfg.user}@" if self.cfg.user else ""
        return f"{user}{self.cfg.host}:{self.cfg.port}"

    def _options(self) -> list[str]:
        from hermes_core.config import hermes_home

        known = f'"{hermes_home() / "known_hosts"}" "{os.path.expanduser("~/.ssh/known_hosts")}"'
        opts = ["ssh", "-p", str(self.cfg.port), "-o", "BatchMode=yes",
                "-o", f"ConnectTimeout={self.cfg.connect_timeout}",
                "-o", "StrictHostKeyChecking=accept-new", "-o", f"UserKnownHostsFile={known}",
                "-o", "LogLevel=ERROR", "-o", "ServerAliveInterval=30", "-T"]
        if self.cfg.key:
            opts += ["-i", os.path.expanduser(self.cfg.key), "-o", "IdentitiesOnly=yes"]
        if self.cfg.user:
            opts += ["-l", self.cfg.user]
        return opts

    def _control(self) -> str:
        return os.path.join(str(self._dir), "ctl")

    def shell_argv(self, script: str) -> list[str]:
        return [*self._options(), "-S", self._control(), "-o", "ControlMaster=no", self.cfg.host,
                "exec bash -c " + shlex.quote(script)]

    def _connect(self) -> None:
        if shutil.which("ssh") is None:
            raise ToolError(f"terminal.backend is ssh but the ssh client is not installed "
                            f"({INSTALL_HINT})")
        self._dir = tempfile.mkdtemp(prefix="hermes-ssh-")  # short: a socket path has 108 bytes
        log_path = os.path.join(self._dir, "master.log")
        argv = [*self._options(), "-M", "-S", self._control(), "-o", "ControlPersist=no",
                self.cfg.host, "exec cat > /dev/null"]
        with open(log_path, "wb") as log:
            self._master = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                            stderr=log, start_new_session=True)
        deadline = time.monotonic() + self.cfg.connect_timeout + 5
        while not self._ready():
            if self._master.poll() is not None or time.monotonic() > deadline:
                why = _last_line(log_path) or "no answer in time"
                self._disconnect()
                raise ToolError(f"cannot connect to {self.describe()} over SSH: {why}")
            time.sleep(0.05)

    def _ready(self) -> bool:
        if self._master is None or self._master.poll() is not None:
            return False
        if not os.path.exists(self._control()):
            return False
        check = [*self._options(), "-S", self._control(), "-O", "check", self.cfg.host]
        return subprocess.run(check, capture_output=True, timeout=10).returncode == 0

    def _alive(self) -> bool:
        return self._master is not None and self._master.poll() is None

    def _disconnect(self) -> None:
        master, self._master = self._master, None
        if master is not None:
            if master.poll() is None and os.path.exists(self._control()):
                subprocess.run([*self._options(), "-S", self._control(), "-O", "exit",
                                self.cfg.host], capture_output=True, timeout=10)
            if master.stdin is not None:
                master.stdin.close()
            try:
                master.wait(timeout=5)
            except subprocess.TimeoutExpired:
                master.kill()
                master.wait()
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""
