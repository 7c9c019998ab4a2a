"""A real Matrix homeserver (Synapse from PyPI, SQLite) on a loopback port, for the tests and the
platform benchmark. Started with its own config in a temp dir; users are registered through the
shared-secret admin API (``/_synapse/admin/v1/register``), as an operator would.

Rate limits are lifted (the benchmark drives 100 rooms at once) and federation is off.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

SECRET = "hermes-test-registration-secret"
_UNLIMITED = {"per_second": 10000, "burst_count": 100000}
_LIMITS = ("rc_message", "rc_registration", "rc_joins", "rc_invites", "rc_3pid_validation",
           "rc_admin_redaction", "rc_room_creation", "rc_presence", "rc_delayed_event_mgmt",
           "rc_reports", "rc_media_create")


def available() -> Optional[str]:
    """Why Synapse cannot run here, or None."""
    try:
        import synapse  # noqa: F401
    except ImportError:
        return "matrix-synapse is not installed (pip install matrix-synapse; it is a dev extra)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(root: Path, port: int) -> dict[str, Any]:
    limits: dict[str, Any] = {name: dict(_UNLIMITED) for name in _LIMITS}
    limits["rc_login"] = {k: dict(_UNLIMITED) for k in ("address", "account", "failed_attempts")}
    limits["rc_joins"] = {"local": dict(_UNLIMITED), "remote": dict(_UNLIMITED)}
    limits["rc_invites"] = {k: dict(_UNLIMITED) for k in ("per_room", "per_user", "per_issuer")}
    return {
        "server_name": "localhost", "pid_file": str(root / "homeserver.pid"),
        "listeners": [{"port": port, "bind_addresses": ["127.0.0.1"], "type": "http", "tls": False,
                       "x_forwarded": False, "resources": [{"names": ["client"],
                                                             "compress": False}]}],
        "database": {"name": "sqlite3", "args": {"database": str(root / "homeserver.db")}},
        "log_config": str(root / "log.yaml"), "media_store_path": str(root / "media"),
        "signing_key_path": str(root / "signing.key"), "registration_shared_secret": SECRET,
        "report_stats": False, "macaroon_secret_key": "hermes-test-macaroon",
        "form_secret": "hermes-test-form", "trusted_key_servers": [],
        "federation_domain_whitelist": [],
        "suppress_key_server_warning": True, "enable_metrics": False,
        "presence": {"enabled": False}, "url_preview_enabled": False,
        "max_upload_size": "10M", "enable_media_repo": True,
        "bcrypt_rounds": 4,  # registering 100 accounts for the benchmark takes seconds, not minutes
        **limits,
    }


def _log_config(path: Path) -> dict[str, Any]:
    fmt = "%(asctime)s %(levelname)s %(name)s %(message)s"
    return {"version": 1, "formatters": {"f": {"format": fmt}},
            "handlers": {"file": {"class": "logging.FileHandler", "filename": str(path),
                                  "formatter": "f"}},
            "root": {"level": "WARNING", "handlers": ["file"]}, "disable_existing_loggers": False}


class Synapse:
    """One homeserver process; ``restart()`` stops and starts it on the same port and data."""

    def __init__(self, root: Optional[Path] = None, port: int = 0) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="hermes-synapse-"))
        self.port = port or free_port()
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.config = self.root / "homeserver.yaml"
        self.config.write_text(json.dumps(_config(self.root, self.port)), encoding="utf-8")
        (self.root / "log.yaml").write_text(json.dumps(_log_config(self.root / "homeserver.log")),
                                            encoding="utf-8")
        self._signing_key()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _signing_key(self) -> None:
        from signedjson.key import generate_signing_key, write_signing_keys

        with open(self.root / "signing.key", "w", encoding="utf-8") as fh:
            write_signing_keys(fh, [generate_signing_key("a")])

    def start(self, timeout: float = 120) -> "Synapse":
        env = dict(os.environ, SYNAPSE_ASYNC_IO_REACTOR="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "synapse.app.homeserver", "-c",
                                      str(self.config)], cwd=self.root, env=env,
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(self.root / "stderr.log", "ab"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"synapse exited {self.proc.returncode}: "
                                   + (self.root / "stderr.log").read_text()[-2000:])
            try:
                with urllib.request.urlopen(self.url + "/_matrix/client/versions", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("synapse did not answer within %.0f s" % timeout)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def _post(self, path: str, body: dict[str, Any], token: Optional[str] = None) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def register(self, user: str, password: str, admin: bool = False) -> dict[str, Any]:
        """A new account through the shared-secret registration API: ``{user_id, access_token}``."""
        with urllib.request.urlopen(self.url + "/_synapse/admin/v1/register", timeout=30) as resp:
            nonce = json.loads(resp.read())["nonce"]
        mac = hmac.new(SECRET.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join(p.encode() for p in (nonce, user, password,
                                                       "admin" if admin else "notadmin")))
        digest = mac.hexdigest()
        return self._post("/_synapse/admin/v1/register", {
            "nonce": nonce, "username": user, "password": password, "admin": admin, "mac": digest})
