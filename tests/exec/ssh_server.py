"""A real OpenSSH server on a loopback port for the SSH backend's tests (Debian openssh-server).

Generated host and client keys in a temp dir, ``AuthorizedKeysFile`` pointing at the client's
public key, ``StrictModes no``, listening on 127.0.0.1 only; ``sshd -D`` in the foreground, so
stopping the fixture stops the server.
"""
from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional

SSHD = "/usr/sbin/sshd"
PACKAGES = "apt-get install openssh-server openssh-client"


def missing() -> Optional[str]:
    """Why the server cannot run here, or None."""
    if not os.path.exists(SSHD):
        return f"no OpenSSH server ({SSHD}; {PACKAGES})"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"no {tool} ({PACKAGES})"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SSHServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.user = getpass.getuser()
        self.port = free_port()
        self.key = root / "client_key"
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "SSHServer":
        self.root.mkdir(parents=True, exist_ok=True)
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            str(self.root / name)], check=True)
        config = self.root / "sshd_config"
        config.write_text("\n".join([
            f"HostKey {self.root / 'host_key'}", f"AuthorizedKeysFile {self.key}.pub",
            "ListenAddress 127.0.0.1", "StrictModes no", "UsePAM no", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password", f"PidFile {self.root / 'sshd.pid'}",
            "LogLevel ERROR", "Subsystem sftp internal-sftp", "",
        ]))
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        log = open(self.root / "sshd.log", "wb")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config), "-p", str(self.port)],
                                     stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.root / 'sshd.log').read_text()[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start listening within 20 s")

    def config(self) -> dict:
        """``terminal.ssh`` for this server."""
        return {"host": "127.0.0.1", "user": self.user, "port": self.port, "key": str(self.key)}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
