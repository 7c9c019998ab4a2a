"""A provider's streamed chat completion read straight off the HTTP response, as plain dicts.

Why: the SDK's ``Stream`` builds a pydantic object per chunk (most of a streamed turn's CPU in the
gateway); the loop only needs the JSON. ``request_chat`` asks the SDK for the unread response (the
``X-Stainless-Raw-Response: stream`` header of its own ``with_streaming_response``) and hands it
here. What the SDK's stream did stays: ``[DONE]`` ends it, an ``error`` member in a chunk raises
``openai.APIError``, and a transport failure mid-stream (a cut connection, a read timeout) raises
``APIConnectionError`` / ``APITimeoutError``, so the loop classifies and retries as before.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from hermes_core import wire_json


def sse_records(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """``(event, data)`` of each server-sent event in ``lines`` (pure; the text/event-stream rules:
    ``data`` lines joined by newlines, comments skipped, a blank line ends a record)."""
    event, data = "", []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", []
            continue
        if line[0] == ":":
            continue
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield event, "\n".join(data)


def stream_error(chunk: Any) -> "tuple[str, Any] | None":
    """(message, body) when a decoded chunk is a provider's in-stream error report, else None."""
    if not isinstance(chunk, dict) or not chunk.get("error"):
        return None
    error = chunk["error"]
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    return message, error


def _transport_errors() -> tuple[type[BaseException], tuple[type[BaseException], ...]]:
    """(timeout, any other transport failure) of the HTTP library the SDK runs on."""
    import ssl

    try:
        import httpx2 as httpx
    except ImportError:  # SDK releases on plain httpx
        import httpx  # type: ignore[no-redef]
    return httpx.TimeoutException, (httpx.RequestError, ssl.SSLError)


def chat_chunks(response: Any) -> Iterator[dict]:
    """The decoded chunks of a streamed chat completion (an unread httpx response); closes it."""
    import openai

    timeout, transport = _transport_errors()
    try:
        lines = response.iter_lines()
        for _event, data in sse_records(lines):
            if data.startswith("[DONE]"):
                next(lines, None)  # the body's end follows: read it so the connection is reused
                return
            chunk = wire_json.loads(data)
            failed = stream_error(chunk)
            if failed is not None:
                raise openai.APIError(failed[0], response.request, body=failed[1])
            yield chunk
    except timeout as exc:
        raise openai.APITimeoutError(request=response.request) from exc
    except transport as exc:
        raise openai.APIConnectionError(request=response.request) from exc
    finally:
        response.close()
