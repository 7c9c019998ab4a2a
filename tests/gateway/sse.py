"""A small SSE client of the tests' own (not the SDK's), so event names and fields are checked exactly."""
from __future__ import annotations

import http.client
import json
from typing import Any, Optional
from urllib.parse import urlsplit


def parse_sse(raw: str) -> list[tuple[Optional[str], Any]]:
    """``[(event name or None, data)]``: data is JSON-decoded, ``"[DONE]"`` kept as text; comments
    (``: keep-alive``) are skipped; multi-line data is joined with newlines, as the SSE spec says."""
    records: list[tuple[Optional[str], Any]] = []
    for block in raw.replace("\r\n", "\n").split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
        if data:
            text = "\n".join(data)
            records.append((event, text if text == "[DONE]" else json.loads(text)))
    return records


def post(url: str, key: str, payload: dict[str, Any], headers: Optional[dict[str, str]] = None,
         timeout: float = 60) -> tuple[int, dict[str, str], str]:
    """POST JSON; (status, headers with lower-case names, body text) after the whole body arrived."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("POST", parts.path, body=json.dumps(payload),
                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}",
                              **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode()
    finally:
        conn.close()


def request(method: str, url: str, key: Optional[str], headers: Optional[dict[str, str]] = None
            ) -> tuple[int, Any]:
    """(status, decoded JSON body) of a body-less request."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        conn.request(method, target, headers={**auth, **(headers or {})})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


class EventStream:
    """An SSE response read record by record as it arrives: ``next()`` -> (event, data, id)."""

    def __init__(self, url: str, key: str, headers: Optional[dict[str, str]] = None,
                 timeout: float = 60) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        auth = {"Authorization": f"Bearer {key}"}
        self.conn.request("GET", target, headers={**auth, **(headers or {})})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def next(self) -> Optional[tuple[Optional[str], Any, Optional[str]]]:
        """The next record, or None at the end of the stream."""
        event, data, ident = None, [], None
        while True:
            line = self.resp.readline()
            if not line:
                return None
            text = line.decode().rstrip("\r\n")
            if not text:
                if data:
                    return event, json.loads("\n".join(data)), ident
                continue
            field, _, value = text.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                ident = value

    def until(self, name: str) -> list[tuple[Optional[str], Any, Optional[str]]]:
        """Records up to and including the first one named ``name``."""
        seen = []
        while (record := self.next()) is not None:
            seen.append(record)
            if record[0] == name:
                return seen
        raise AssertionError(f"the stream ended before {name!r}: {[r[0] for r in seen]}")

    def close(self) -> None:
        self.conn.close()
