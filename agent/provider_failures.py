"""What a turn says when the provider failed for good, and the code surfaces map it to. Pure.

Every message names the endpoint (without secrets: ``agent.providers.models.shown_url``) and what
to do; none claims the message was saved (only the surface knows: a stateless API request stores
nothing), and each is one sentence, so a surface can add its own without doubled punctuation.
Codes: ``provider_unreachable`` (connection, timeout), ``provider_overloaded`` (429, 503, 529),
``provider_error`` (other 5xx, malformed answers), ``provider_auth``, ``provider_refused`` (4xx),
``provider_stopped`` (the embedded model's process died or hung).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from agent.error_classifier import ClassifiedError, ErrorKind
from hermes_core.images import rejects_images

OVERLOADED_STATUSES = (429, 503, 529)
_SDK_PREFIX = re.compile(r"^\s*Error code:\s*\d{3}\s*-\s*")


@dataclass(frozen=True)
class Failure:
    message: str
    code: str
    retry_after: Optional[float] = None


def _detail(err: ClassifiedError, text: str) -> str:
    """The provider's own words, one line, without the SDK's "Error code: 404 - " prefix."""
    text = _SDK_PREFIX.sub("", text).strip()
    first = text.splitlines()[0][:300] if text else err.kind.value
    return first.rstrip(" .")


def code_for(err: ClassifiedError) -> str:
    if err.kind is ErrorKind.STOPPED:
        return "provider_stopped"
    if err.kind is ErrorKind.AUTH:
        return "provider_auth"
    if err.kind in (ErrorKind.CONNECTION, ErrorKind.TIMEOUT):
        return "provider_unreachable"
    if err.kind is ErrorKind.RATE_LIMIT or err.status in OVERLOADED_STATUSES:
        return "provider_overloaded"
    if err.kind in (ErrorKind.SERVER, ErrorKind.UNKNOWN):
        return "provider_error"
    return "provider_refused"


def describe(err: ClassifiedError, text: str, retries: int, url: str, model: str,
             key_setting: str) -> Failure:
    """The one line a user reads for a provider failure; ``text`` is the error's (redacted) text."""
    detail, code = _detail(err, text), code_for(err)
    if code == "provider_stopped":  # the embedded model's own message says what happened
        return Failure(text.strip(), code)
    status = f"HTTP {err.status}" if err.status else err.kind.value
    if code == "provider_auth":
        msg = (f"The provider at {url} rejected the credentials ({status}); fix {key_setting} "
               "(or run `hermes setup`) and try again")
    elif code == "provider_unreachable":
        msg = (f"Could not reach the provider at {url} ({err.kind.value}: {detail}) after "
               f"{retries} retries; check that it is running and that the base URL is right "
               "(`hermes config get model.base_url`), then try again")
    elif err.retryable:
        msg = (f"The provider at {url} kept failing ({status}: {detail}) after {retries} retries; "
               "try again in a moment")
    elif err.kind is ErrorKind.CLIENT and rejects_images(text):
        msg = (f"The model {model} does not accept images ({detail}); use a model that reads "
               "images (-m, or model.default), or /undo and describe the image in words")
    elif err.status == 404:
        msg = (f"The provider at {url} answered 404 for model {model!r} ({detail}); check the "
               "model name (the endpoint's /v1/models lists them) and that the base URL ends "
               "in /v1")
    else:
        msg = f"The provider at {url} refused the request ({status}): {detail}"
    return Failure(msg + ".", code, err.retry_after)
