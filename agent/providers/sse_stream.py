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


def _field(line: bytes, data: list[bytes]) -> None:
    """One line of a record: a ``data`` line's value joins ``data``; comments, ``event``, ``id``
    and ``retry`` lines are read past (no caller needs them)."""
    if line[-1:] == b"\r":
        line = line[:-1]
    if line[:5] == b"data:":
        data.append(line[6:] if line[5:6] == b" " else line[5:])
    elif line == b"data":
        data.append(b"")


def sse_data(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The ``data`` of each server-sent event of a body read in pieces of any size (pure; the
    text/event-stream rules: a record's ``data`` lines joined by newlines, a blank line ends it).
    Why bytes in one pass: each line was decoded to text and walked again as a record, and the
    JSON decoder takes the bytes as they are."""
    buf, data = b"", []
    for piece in pieces:
        *lines, buf = (buf + piece if buf else piece).split(b"\n")
        for line in lines:
            if line and line != b"\r":
                _field(line, data)
            elif data:
                yield b"\n".join(data)
                data = []
    if buf:
        _field(buf, data)
    if data:
        yield b"\n".join(data)


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
        pieces = response.iter_bytes()
        for data in sse_data(pieces):
            if data.startswith(b"[DONE]"):
                next(pieces, None)  # the body's end follows: read it so the connection is reused
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
