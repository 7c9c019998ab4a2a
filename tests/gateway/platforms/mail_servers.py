"""Real mail servers for the email tests: Dovecot (Debian's ``dovecot-imapd``) configured in a
temp dir on a loopback port, with a passwd-file of test accounts and Maildir storage; and an
aiosmtpd SMTP server keeping every message it receives. ``deliver`` drops a message straight
into an account's Maildir (as a local delivery agent would), so mail arrives even while Dovecot
is down."""
from __future__ import annotations

import email
import email.policy
import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

DOVECOT = "/usr/sbin/dovecot"
MAIL_USER = "nobody"  # as root, Dovecot serves mail as this account; else as the test's user


def dovecot_missing() -> Optional[str]:
    if not os.path.exists(DOVECOT):
        return "Dovecot is not installed (apt-get install dovecot-imapd)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Dovecot:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="hermes-dovecot-"))
        os.chmod(self.root, 0o755)
        self.port = free_port()
        self.proc: Optional[subprocess.Popen[bytes]] = None
        who = pwd.getpwnam(MAIL_USER) if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
        self.uid, self.gid, self.user = who.pw_uid, who.pw_gid, who.pw_name
        (self.root / "users").write_text("")
        (self.root / "home").mkdir()
        os.chown(self.root / "home", self.uid, self.gid)
        (self.root / "dovecot.conf").write_text(self._config())

    def _config(self) -> str:
        r = self.root
        return f"""
base_dir = {r}/run
state_dir = {r}/state
log_path = {r}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
first_valid_uid = {self.uid}
{self._own_users()}mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {r}/users
}}
userdb {{
  driver = static
  args = uid={self.uid} gid={self.gid} home={r}/home/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
service imap-login {{
  chroot =
}}
"""

    def _own_users(self) -> str:
        """Not root: every Dovecot process runs as the test's user (no chroot, no drops)."""
        if os.geteuid() == 0:
            return ""
        group = grp.getgrgid(self.gid).gr_name
        return (f"default_internal_user = {self.user}\ndefault_internal_group = {group}\n"
                f"default_login_user = {self.user}\n")

    def add_user(self, address: str, password: str) -> None:
        with open(self.root / "users", "a", encoding="utf-8") as fh:
            fh.write(f"{address}:{{PLAIN}}{password}\n")

    def start(self, timeout: float = 30) -> "Dovecot":
        self.proc = subprocess.Popen([DOVECOT, "-F", "-c", str(self.root / "dovecot.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("dovecot exited: " + (self.proc.stderr.read() or b"").decode())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(100).startswith(b"* OK"):
                        return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("dovecot did not answer")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def restart(self) -> None:
        self.stop()
        self.start()

    def deliver(self, address: str, raw: bytes) -> None:
        """Put a message into ``address``'s INBOX (Maildir ``new/``), as a delivery agent does."""
        box = self.root / "home" / address / "Maildir"
        for sub in ("tmp", "new", "cur"):
            (box / sub).mkdir(parents=True, exist_ok=True)
        for path in [self.root / "home" / address, *box.rglob("*")] + [box]:
            os.chown(path, self.uid, self.gid)
        name = f"{time.time_ns()}.{os.getpid()}.hermes-test"
        tmp = box / "tmp" / name
        tmp.write_bytes(raw)
        os.chown(tmp, self.uid, self.gid)
        os.rename(tmp, box / "new" / name)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class SMTPSink:
    """aiosmtpd on a loopback port; ``messages`` are the parsed emails it received."""

    def __init__(self) -> None:
        self.accounts: dict[str, str] = {}  # the logins AUTH accepts (no TLS on loopback)
        self.messages: list[Any] = []
        self.port = free_port()
        self._controller: Any = None
        self._lock = threading.Lock()

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._lock:
            self.messages.append(msg)
        return "250 OK"

    def _authenticate(self, _server: Any, _session: Any, _envelope: Any, _mechanism: str,
                      data: Any) -> Any:
        from aiosmtpd.smtp import AuthResult

        login = getattr(data, "login", b"").decode()
        password = getattr(data, "password", b"").decode()
        return AuthResult(success=login in self.accounts and self.accounts[login] == password)

    def start(self) -> "SMTPSink":
        from aiosmtpd.controller import Controller

        self._controller = Controller(self, hostname="127.0.0.1", port=self.port,
                                      authenticator=self._authenticate, auth_require_tls=False)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def to(self, address: str) -> list[Any]:
        with self._lock:
            return [m for m in self.messages if address in str(m.get("To", ""))]
