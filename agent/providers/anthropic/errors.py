"""Anthropic failures as the rest of Hermes reads them. Pure.

The SDK's errors already carry what ``agent.error_classifier`` reads (``status_code``, the
response's ``Retry-After``, class names like ``RateLimitError``). Two need words of their own:
- an overflow worded "input length and `max_tokens` exceed context limit: 180000 + 32000 >
  200000" is restated as "prompt is too long: 212000 tokens > 200000 maximum", the wording the
  classifier knows, so compression runs and the window is learned as on the OpenAI path;
- an ``error`` event in the middle of a stream (e.g. ``overloaded_error``) arrives on an HTTP 200
  response; it becomes ``ProviderStreamError`` with the status that error type means (529, 500...).
"""
from __future__ import annotations

import re
from typing import Any, Optional

_EXCEED = re.compile(r"input length and `?max_tokens`? exceed context limit:\s*(\d+)\s*\+\s*"
                     r"(\d+)\s*>\s*(\d+)", re.I)
STREAM_STATUS = {"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429,
                 "request_too_large": 413, "invalid_request_error": 400,
                 "authentication_error": 401, "permission_error": 403, "not_found_error": 404}


class ProviderStreamError(Exception):
    """An error the provider sent inside a stream; ``status_code`` is what its type means."""

    def __init__(self, message: str, status_code: int, error_type: str = "") -> None:
        super().__init__(f"Error code: {status_code} - {error_type}: {message}")
        self.status_code, self.error_type = status_code, error_type


class ContextOverflowError(Exception):
    """The request does not fit the model's window (worded for ``agent.error_classifier``)."""

    def __init__(self, message: str, status_code: int = 400, response: Any = None) -> None:
        super().__init__(message)
        self.status_code, self.response = status_code, response


def error_text(exc: Any) -> str:
    """The provider's own message of an SDK error (its JSON body), else the error's text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)
    return str(getattr(exc, "message", "") or exc)


def overflow_wording(text: str) -> Optional[str]:
    """The classifier's wording for an Anthropic overflow message it would not recognise."""
    match = _EXCEED.search(text or "")
    if not match:
        return None
    used = int(match.group(1)) + int(match.group(2))
    return f"prompt is too long: {used} tokens > {int(match.group(3))} maximum ({text.strip()})"


def translate(exc: BaseException) -> BaseException:
    """The exception to raise instead of ``exc`` (``exc`` itself when it reads fine)."""
    status = getattr(exc, "status_code", None)
    if status in (400, 413, 422):
        worded = overflow_wording(error_text(exc))
        if worded:
            return ContextOverflowError(worded, 400, getattr(exc, "response", None))
    return exc


def stream_error(exc: BaseException) -> Optional[ProviderStreamError]:
    """An SDK error raised for an ``error`` event inside a 200 stream, restated with its status."""
    if getattr(exc, "status_code", None) not in (200, None):
        return None
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    kind = inner.get("type") if isinstance(inner, dict) else None
    if kind not in STREAM_STATUS:
        return None
    return ProviderStreamError(error_text(exc), STREAM_STATUS[kind], kind)
