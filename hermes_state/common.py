"""What both backends share: errors, ids, lock-holder judgement, message encoding, URLs.

Pure helpers (no database): the store's mixins and both backends import them from here.
"""
from __future__ import annotations

import json
import logging
import os
import re
import secrets
import socket
import time
from pathlib import Path
from typing import Any, Iterable, Optional
from urllib.parse import urlsplit, urlunsplit

logger = logging.getLogger("hermes_state")

PREVIEW_CHARS = 60


class SessionDBError(RuntimeError):
    """The store cannot be opened or reached; the message names it (a URL without its password)
    and what to do about it. ``unusable_config``: the configured store cannot be used at all
    (bad URL, server unreachable): the CLI exits 2."""

    unusable_config = False


def unusable(message: str) -> SessionDBError:
    """A ``SessionDBError`` saying the configured store cannot be used (CLI exit status 2)."""
    exc = SessionDBError(message)
    exc.unusable_config = True
    return exc


# A NUL byte in text: PostgreSQL's TEXT cannot hold one, so on both backends every text value a
# statement sends has it replaced by U+FFFD (one message with a NUL used to stop every later save
# of its session). JSON columns are unaffected: json.dumps writes it as \u0000, which round-trips.
NUL_REPLACEMENT = "\ufffd"


def clean_params(params: Iterable[Any]) -> tuple[Any, ...]:
    """``params`` with NUL bytes in strings replaced (``NUL_REPLACEMENT``); the rest as given."""
    params = tuple(params)
    for p in params:  # the usual case, nothing to clean, costs one plain loop
        if isinstance(p, str) and "\x00" in p:
            break
    else:
        return params
    return tuple(p.replace("\x00", NUL_REPLACEMENT) if isinstance(p, str) and "\x00" in p else p
                 for p in params)


class LeaseLost(RuntimeError):
    """A fenced write found that this process no longer holds the named lock (its lock
    connection died and another worker may hold it now): nothing was written."""


class CompressionLockLost(RuntimeError):
    """A fenced compaction found the session's compression lock no longer names its holder."""


def new_session_id() -> str:
    """Sortable, readable and unique enough: ``20261130_191500_ab12cd``."""
    return time.strftime("%Y%m%d_%H%M%S") + "_" + secrets.token_hex(3)


def dicts(cur: Any) -> list[dict[str, Any]]:
    """Every row of a DB-API cursor as a dict (sqlite3 and psycopg cursors alike)."""
    names = [d[0] for d in cur.description or ()]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def encode_content(content: Any) -> tuple[Optional[str], Optional[str]]:
    """(text, parts): strings as-is; lists/dicts of content parts as JSON plus their plain text."""
    if content is None or isinstance(content, str):
        return content, None
    return content_text(content), json.dumps(content, ensure_ascii=False)


def decode_content(text: Optional[str], parts: Optional[str]) -> Any:
    if parts is None:
        return text
    try:
        return json.loads(parts)
    except ValueError:
        logger.warning("session store: unreadable content parts; returning the message text")
        return text


def parse_tool_calls(raw: Optional[str]) -> tuple[Any, bool]:
    """(value, ok): parsed list, or the raw text with ok=False when the column is corrupt."""
    try:
        return (None if raw is None else json.loads(raw)), True
    except ValueError:
        return raw, False


def message_rows(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Stored message rows as dicts: content decoded (parts back to a list), tool_calls parsed (a
    corrupt column comes back as its raw text)."""
    out = []
    for row in rows:
        d = dict(row)
        d["content"] = decode_content(d["content"], d.pop("content_parts"))
        d["tool_calls"], _ = parse_tool_calls(d["tool_calls"])
        out.append(d)
    return out


# How a skill invocation is stored (tools.skills.invoke.message builds it from these): the
# preview of such a message is what the user typed, not the skill's text.
SKILL_HEAD = '[The user invoked the skill "{name}" with /{name}.'
SKILL_END = '[End of skill "{name}"]'
SKILL_NO_TEXT = "(no further text: follow the skill)"
_SKILL_HEAD = re.compile(r'^\[The user invoked the skill "([^"]+)" with /')


def typed_text(text: str) -> str:
    """``/name request`` for a stored skill invocation (as the user typed it), else ``text``."""
    m = _SKILL_HEAD.match(text or "")
    if not m:
        return text
    end = SKILL_END.format(name=m.group(1))
    at = text.rfind(end)
    if at < 0:
        return text
    ask = text[at + len(end):].strip()
    return f"/{m.group(1)}" + ("" if ask in ("", SKILL_NO_TEXT) else f" {ask}")


def content_text(content: Any) -> str:
    """Plain text of a message content, for previews."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return " ".join(str(p.get("text") or "") if isinstance(p, dict) else str(p)
                        for p in content if isinstance(p, (dict, str))).strip()
    return "" if content is None else str(content)


_PID_RE = re.compile(r"(?:^|:)pid=(\d+)")
_HOST_RE = re.compile(r"(?:^|:)host=([^:]+)")


def machine_id() -> str:
    """This host's name in lock holders: ``HERMES_MACHINE_ID`` when set, else the hostname.

    Containers and hosts can share a hostname while their pids mean different processes; the
    variable lets an operator give each pid namespace its own identity. ``:`` separates holder
    fields, so it (and whitespace) becomes ``_``.
    """
    name = os.environ.get("HERMES_MACHINE_ID", "").strip() or socket.gethostname()
    return re.sub(r"[:\s]", "_", name)


def holder_is_dead(holder: str) -> bool:
    """True only when the holder's process is provably gone from this host (SPEC §5).

    Unknown pid, another host (``host=`` other than :func:`machine_id`), our own pid, or a
    permission error all count as alive: a false "dead" would let two processes compress the
    same session, a false "alive" only waits the TTL. A holder without ``host=`` is judged by
    its pid on this host.
    """
    host = _HOST_RE.search(holder or "")
    if host and host.group(1) != machine_id():
        return False
    m = _PID_RE.search(holder or "")
    if not m:
        return False
    pid = int(m.group(1))
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: exists but belongs to someone else
        return False
    try:  # a killed but unreaped process (zombie) still answers kill(0); it holds nothing
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def fts_fallback_query(query: str) -> str:
    """Every whitespace-separated term as a quoted phrase (dangling operators dropped): the search
    syntax can no longer fail."""
    terms = [t.replace('"', "") for t in query.split() if t not in ("AND", "OR", "NOT")]
    return " ".join('"' + t + '"' for t in terms if any(ch.isalnum() for ch in t))


# -- where the store lives --------------------------------------------------------------------

def is_postgres_url(url: Optional[str]) -> bool:
    return bool(url) and str(url).split("://", 1)[0].lower() in ("postgresql", "postgres")


def redact_url(url: str) -> str:
    """The URL as it may be shown: the password (and the query, which may carry one) removed."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = (f"{parts.username}@" if parts.username else "") + host
        if parts.port:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return url.split("://", 1)[0] + "://…"


def scrub(text: str, url: str) -> str:
    """``text`` (e.g. a driver's error) with the URL's password taken out wherever it appears."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    text = text.replace(url, redact_url(url))
    return text.replace(password, "***") if password else text


def env_url() -> Optional[str]:
    """``HERMES_DATABASE_URL``, or None. The store reads no config file: callers that have a
    config hand its ``store`` section over (``SessionDB.from_config``)."""
    return os.environ.get("HERMES_DATABASE_URL", "").strip() or None
