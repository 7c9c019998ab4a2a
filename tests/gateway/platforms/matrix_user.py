"""A person on the homeserver, driven over the client-server API (urllib, synchronous): makes
rooms, invites, sends text and media, and reads what the bot sent."""
from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any, Optional


class MatrixUser:
    def __init__(self, base: str, user_id: str, token: str) -> None:
        self.base, self.user_id, self.token = base, user_id, token
        self._txn = 0

    def call(self, method: str, path: str, body: Any = None, raw: Optional[bytes] = None,
             content_type: str = "application/json") -> dict[str, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": content_type})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"{}")

    def create_room(self, invite: list[str], direct: bool = False) -> str:
        body = {"invite": invite, "is_direct": direct, "preset": "private_chat"}
        return str(self.call("POST", "/_matrix/client/v3/createRoom", body)["room_id"])

    def invite(self, room: str, user: str) -> None:
        self.call("POST", f"/_matrix/client/v3/rooms/{_q(room)}/invite", {"user_id": user})

    def join(self, room: str) -> None:
        self.call("POST", f"/_matrix/client/v3/join/{_q(room)}", {})

    def members(self, room: str) -> list[str]:
        path = f"/_matrix/client/v3/rooms/{_q(room)}/joined_members"
        return list(self.call("GET", path)["joined"])

    def send(self, room: str, content: dict[str, Any]) -> str:
        self._txn += 1
        txn = f"t{time.time_ns()}{self._txn}"
        path = f"/_matrix/client/v3/rooms/{_q(room)}/send/m.room.message/{txn}"
        return str(self.call("PUT", path, content)["event_id"])

    def say(self, room: str, text: str, **extra: Any) -> str:
        return self.send(room, {"msgtype": "m.text", "body": text, **extra})

    def upload(self, data: bytes, mime: str, name: str) -> str:
        path = f"/_matrix/media/v3/upload?filename={_q(name)}"
        return str(self.call("POST", path, raw=data, content_type=mime)["content_uri"])

    def messages(self, room: str, sender: Optional[str] = None) -> list[dict[str, Any]]:
        """The room's m.room.message events, oldest first (of ``sender`` when given)."""
        path = f"/_matrix/client/v3/rooms/{_q(room)}/messages?dir=b&limit=200"
        chunk = self.call("GET", path)["chunk"]
        out = [e for e in reversed(chunk) if e.get("type") == "m.room.message"]
        return [e for e in out if sender is None or e.get("sender") == sender]


def _q(value: str) -> str:
    return urllib.parse.quote(value, safe="")
