"""Provider error -> kind, with the context limit parsed out of overflow messages. Pure.

Works on anything raised by the openai SDK, by httpx, or by a test double: it reads
``status_code``, ``response.headers`` and the message text duck-typed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional


class ErrorKind(str, Enum):
    RATE_LIMIT = "rate_limit"
    SERVER = "server_error"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    AUTH = "auth"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    CONTEXT_OVERFLOW = "context_overflow"
    CLIENT = "client_error"
    STOPPED = "provider_stopped"  # the embedded model's process died or hung: say so, no retry
    UNKNOWN = "unknown"


RETRYABLE = {ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.TIMEOUT, ErrorKind.CONNECTION}


@dataclass(frozen=True)
class ClassifiedError:
    kind: ErrorKind
    status: Optional[int]
    message: str
    retry_after: Optional[float] = None
    context_limit: Optional[int] = None

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


_OVERFLOW_MARKERS = (
    "prompt is too long", "maximum context length", "context_length_exceeded",
    "context length exceeded", "context window", "too many tokens", "exceeds the context",
    "input is too long",
    "reduce the length of the messages", "requested tokens", "exceed context window",
    "longer than the model's context length", "prompt too long",
)
_LIMIT_PATTERNS = (
    re.compile(r"(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)\s*maximum", re.I),
    re.compile(r"maximum context length is\s*(\d[\d,]*)", re.I),
    re.compile(r"context (?:length|window)(?: of| is)?\s*(?:only\s*)?(\d[\d,]*)", re.I),
    re.compile(r"exceed(?:s|ed)? (?:the )?context window of\s*(\d[\d,]*)", re.I),
    re.compile(r"limit(?: is| of)?\s*(\d[\d,]*)\s*tokens", re.I),
)
_TIMEOUT_NAMES = ("Timeout", "TimedOut", "ReadTimeout")
_CONNECTION_NAMES = ("APIConnectionError", "ConnectError", "RemoteProtocolError",
                     "ConnectionError", "ReadError", "IncompleteRead", "ProtocolError",
                     "ServerDisconnected", "ChunkedEncodingError")


def _status_of(err: Any) -> Optional[int]:
    for attr in ("status_code", "status", "http_status"):
        v = getattr(err, attr, None)
        if isinstance(v, int):
            return v
    resp = getattr(err, "response", None)
    v = getattr(resp, "status_code", None)
    if isinstance(v, int):
        return v
    m = re.match(r"\s*Error code:\s*(\d{3})", str(err))
    return int(m.group(1)) if m else None


def _retry_after_of(err: Any) -> Optional[float]:
    headers = getattr(getattr(err, "response", None), "headers", None)
    if not headers:
        return None
    try:
        raw = headers.get("retry-after") or headers.get("Retry-After")
    except Exception:
        return None
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except (TypeError, ValueError):
        return None


def parse_context_limit(text: str) -> Optional[int]:
    """The window a provider states in an overflow message, e.g. '233153 tokens > 200000
    maximum'."""
    for pat in _LIMIT_PATTERNS:
        m = pat.search(text)
        if m:
            val = int(m.groups()[-1].replace(",", ""))
            if val >= 256:
                return val
    return None


def is_context_overflow_text(text: str) -> bool:
    low = text.lower()
    return any(marker in low for marker in _OVERFLOW_MARKERS)


def classify_error(err: BaseException) -> ClassifiedError:
    text = str(err) or type(err).__name__
    status = _status_of(err)
    names = {t.__name__ for t in type(err).__mro__}
    retry_after = _retry_after_of(err)

    low = text.lower()
    if getattr(err, "provider_stopped", False) is True:
        return ClassifiedError(ErrorKind.STOPPED, status, text)
    if status == 413 and ("rate limit" in low or "rate_limit" in low or "per minute" in low):
        # some providers answer a tokens-per-minute limit with 413: wait, do not compress
        return ClassifiedError(ErrorKind.RATE_LIMIT, status, text, retry_after=retry_after)
    if status == 413 or "request entity too large" in low or "payload too large" in low:
        return ClassifiedError(ErrorKind.PAYLOAD_TOO_LARGE, status or 413, text)
    if is_context_overflow_text(text) and (status in (None, 400, 422) or status < 500):
        return ClassifiedError(ErrorKind.CONTEXT_OVERFLOW, status, text,
                               context_limit=parse_context_limit(text))
    if status in (401, 403) or names & {"AuthenticationError", "PermissionDeniedError"}:
        return ClassifiedError(ErrorKind.AUTH, status, text)
    if status == 429 or "RateLimitError" in names:
        return ClassifiedError(ErrorKind.RATE_LIMIT, status, text, retry_after=retry_after)
    timed_out = any(t in n for n in names for t in _TIMEOUT_NAMES)
    if status == 408 or timed_out or isinstance(err, TimeoutError):
        return ClassifiedError(ErrorKind.TIMEOUT, status, text)
    if names & {"JSONDecodeError", "APIResponseValidationError"} or "no choices" in text:
        return ClassifiedError(ErrorKind.SERVER, status,
                               f"malformed response from the provider: {text}")
    if status is not None and status >= 500:
        return ClassifiedError(ErrorKind.SERVER, status, text, retry_after=retry_after)
    if names & set(_CONNECTION_NAMES) or isinstance(err, ConnectionError):
        return ClassifiedError(ErrorKind.CONNECTION, status, text)
    if status is not None and 400 <= status < 500:
        return ClassifiedError(ErrorKind.CLIENT, status, text)
    return ClassifiedError(ErrorKind.UNKNOWN, status, text)
