"""The wire: one chat-completions call over an OpenAI-compatible client, streamed or not.

Returns a plain ``ModelReply`` so the loop never touches SDK types. Works with the real ``openai``
client, the embedded local client (same duck type) and test doubles that return SimpleNamespaces.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from agent.providers.direct_wire import WIRE_ATTR, DirectWire, proxied, request_json, wire_of
from agent.providers.sse_stream import chat_chunks
from hermes_core.messages import content_text


@dataclass
class ModelReply:
    content: Optional[str]
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: Optional[str] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    model: Optional[str] = None
    reasoning: Optional[str] = None
    cached_tokens: Optional[int] = None  # prompt tokens read from the provider's prompt cache

    def as_message(self) -> dict:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg


RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"


class StreamInterrupted(Exception):
    """The user interrupted while a reply was streaming."""


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _usage(resp: Any) -> tuple[Optional[int], Optional[int]]:
    usage = _get(resp, "usage")
    if usage is None:
        return None, None
    p, c = _get(usage, "prompt_tokens"), _get(usage, "completion_tokens")
    return (p if isinstance(p, int) else None, c if isinstance(c, int) else None)


def _cached(resp: Any) -> Optional[int]:
    """Prompt tokens the provider read from its cache (OpenAI's ``prompt_tokens_details``)."""
    details = _get(_get(resp, "usage"), "prompt_tokens_details")
    value = _get(details, "cached_tokens") if details is not None else None
    return value if isinstance(value, int) else None


def _tool_call_dict(tc: Any, index: int) -> dict:
    fn = _get(tc, "function") or {}
    args = _get(fn, "arguments")
    if not isinstance(args, str):
        args = json.dumps(args if args is not None else {})
    return {
        "id": _get(tc, "id") or f"call_{index}",
        "type": "function",
        "function": {"name": _get(fn, "name") or "", "arguments": args},
    }


def parse_completion(resp: Any) -> ModelReply:
    """A non-streamed response (SDK object, dict, or namespace) -> ModelReply."""
    choices = _get(resp, "choices") or []
    if not choices:
        raise ValueError("provider returned no choices")
    choice = choices[0]
    msg = _get(choice, "message")
    content = _get(msg, "content")
    if content is not None and not isinstance(content, str):
        content = content_text(content)  # some servers answer with a list of parts
    raw_calls = _get(msg, "tool_calls") or []
    calls = ([_tool_call_dict(tc, i) for i, tc in enumerate(raw_calls)]
             if isinstance(raw_calls, (list, tuple)) else [])
    reasoning = _get(msg, "reasoning_content") or _get(msg, "reasoning")
    p, c = _usage(resp)
    model = _get(resp, "model")
    return ModelReply(content=content, tool_calls=calls,
                      finish_reason=_get(choice, "finish_reason"),
                      prompt_tokens=p, completion_tokens=c,
                      model=model if isinstance(model, str) else None,
                      reasoning=reasoning if isinstance(reasoning, str) else None,
                      cached_tokens=_cached(resp))


def consume_stream(stream: Any, on_delta: Optional[Callable[[str], None]],
                   interrupted: Optional[threading.Event] = None) -> ModelReply:
    """Accumulate chunks into a reply, forwarding text deltas as they arrive."""
    parts: list[str] = []
    thoughts: list[str] = []  # reasoning_content deltas (providers that stream their reasoning)
    calls: dict[int, dict] = {}
    finish = None
    p = c = cached = None
    model = None
    try:
        for chunk in stream:
            if interrupted is not None and interrupted.is_set():
                raise StreamInterrupted()
            cp, cc = _usage(chunk)
            if cp is not None:
                p, c, cached = cp, cc, _cached(chunk)
            model = model or _get(chunk, "model")
            for choice in _get(chunk, "choices") or []:
                delta = _get(choice, "delta")
                if delta is not None:
                    thought = _get(delta, "reasoning_content") or _get(delta, "reasoning")
                    if isinstance(thought, str) and thought:
                        thoughts.append(thought)
                    text = _get(delta, "content")
                    if text:
                        parts.append(text)
                        if on_delta is not None:
                            try:
                                on_delta(text)
                            except Exception:
                                pass
                    for tc in _get(delta, "tool_calls") or []:
                        idx = _get(tc, "index") or 0
                        slot = calls.setdefault(idx, {"id": None, "name": "", "arguments": ""})
                        slot["id"] = slot["id"] or _get(tc, "id")
                        fn = _get(tc, "function")
                        if fn is not None:
                            slot["name"] += _get(fn, "name") or ""
                            slot["arguments"] += _get(fn, "arguments") or ""
                finish = _get(choice, "finish_reason") or finish
            if interrupted is not None and interrupted.is_set():
                raise StreamInterrupted()
    finally:
        close = getattr(stream, "close", None)
        if callable(close) and interrupted is not None and interrupted.is_set():
            try:
                close()
            except Exception:
                pass
    if finish is None and not parts and not calls:
        raise ConnectionError("stream ended before any reply arrived")
    tool_calls = [
        {"id": s["id"] or f"call_{i}", "type": "function",
         "function": {"name": s["name"], "arguments": s["arguments"]}}
        for i, s in sorted(calls.items())
    ]
    return ModelReply(content="".join(parts) if parts else None, tool_calls=tool_calls,
                      finish_reason=finish, prompt_tokens=p, completion_tokens=c,
                      model=model if isinstance(model, str) else None,
                      reasoning="".join(thoughts) or None, cached_tokens=cached)


def request_chat(client: Any, *, model: str, messages: list[dict], tools: Optional[list[dict]],
                 stream_callback: Optional[Callable[[str], None]] = None,
                 interrupted: Optional[threading.Event] = None, max_tokens: Optional[int] = None,
                 raw_body: bool = True, timeout: Optional[float] = None,
                 tool_choice: Optional[str] = None,
                 temperature: Optional[float] = None) -> ModelReply:
    """One call to ``client.chat.completions.create``.

    ``raw_body`` sends the (already well-formed) messages and tool schemas as they are: on the
    client's direct wire (``direct_wire``) when it has one, else through the SDK's ``extra_body``
    (without walking every message through its parameter transformer, ~0.35 ms a message).
    """
    wire = wire_of(client) if raw_body else None
    if wire is not None and wire.acquire():
        return _direct(client, wire, direct_body(model, messages, tools, tool_choice,
                                                 temperature, max_tokens, stream_callback),
                       stream_callback, interrupted, timeout)
    kwargs: dict[str, Any] = {"model": model}
    if temperature is not None:
        kwargs["temperature"] = temperature
    if raw_body:
        body: dict[str, Any] = {"messages": messages}
        if tools:
            body["tools"] = tools
        if tools and tool_choice:
            body["tool_choice"] = tool_choice
        kwargs["messages"] = []
        kwargs["extra_body"] = body
    else:
        kwargs["messages"] = messages
        if tools:
            kwargs["tools"] = tools
            if tool_choice:
                kwargs["tool_choice"] = tool_choice
    if max_tokens:
        kwargs["max_tokens"] = max_tokens
    if timeout:
        kwargs["timeout"] = timeout
    if raw_body:
        # ask the SDK for the raw HTTP response (what its own ``with_raw_response`` does) and
        # read the JSON ourselves: building its pydantic models costs ~0.2 ms a call (a stream:
        # one per chunk; left unread for ``sse_stream``). Any other answer is parsed as is.
        kwargs["extra_headers"] = {RAW_RESPONSE_HEADER: "stream" if stream_callback else "true"}
    if stream_callback is not None:
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
        stream = client.chat.completions.create(**kwargs)
        http = getattr(stream, "http_response", None)
        if callable(getattr(http, "iter_bytes", None)):
            chunks = chat_chunks(http)
            try:
                return consume_stream(chunks, stream_callback, interrupted)
            finally:
                chunks.close()  # the connection goes back even when the loop stops reading early
        return consume_stream(stream, stream_callback, interrupted)
    resp = client.chat.completions.create(**kwargs)
    body = getattr(getattr(resp, "http_response", None), "content", None)
    if isinstance(body, (bytes, bytearray)):
        resp = json.loads(body)
    return parse_completion(resp)


def direct_body(model: str, messages: list[dict], tools: Optional[list[dict]],
                tool_choice: Optional[str], temperature: Optional[float],
                max_tokens: Optional[int], stream_callback: Optional[Callable[[str], None]]
                ) -> dict[str, Any]:
    """The JSON body ``request_chat`` sends on a direct wire (what the SDK sent for it)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
        if tool_choice:
            body["tool_choice"] = tool_choice
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens:
        body["max_tokens"] = max_tokens
    if stream_callback is not None:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _direct(client: Any, wire: Any, body: dict[str, Any],
            stream_callback: Optional[Callable[[str], None]],
            interrupted: Optional[threading.Event], timeout: Optional[float]) -> ModelReply:
    """One request on a taken wire (``direct_wire``), given back after."""
    try:
        if stream_callback is None:
            return parse_completion(request_json(client, wire, body, False, timeout))
        chunks = request_json(client, wire, body, True, timeout)
        try:
            return consume_stream(chunks, stream_callback, interrupted)
        finally:
            chunks.close()
    finally:
        wire.release()


def abort_connections(client: Any) -> bool:
    """Shut the sockets of an SDK client's direct wire and connection pool so a blocked request
    returns at once.

    Used by ``AIAgent.interrupt()`` from another thread. It reaches into the HTTP pool's internals,
    defensively: when they are not there (another client type), it does nothing and the interrupt
    takes effect when the response arrives.
    """
    import socket

    wire = wire_of(client)
    aborted = wire.abort() if wire is not None else False
    http = getattr(client, "_client", None)
    pool = getattr(getattr(http, "_transport", None), "_pool", None)
    for conn in list(getattr(pool, "_connections", None) or []):
        stream = getattr(getattr(conn, "_connection", None), "_network_stream", None)
        try:
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
                aborted = True
        except Exception:
            continue
    return aborted


_SSL_CONTEXT: Any = None


def shared_ssl_context() -> Any:
    """One TLS context per process: building one costs ~25 ms of CPU, which every new agent
    (a burst of gateway sessions) would otherwise pay."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        import ssl

        try:
            import certifi

            _SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())
        except ImportError:
            _SSL_CONTEXT = ssl.create_default_context()
    return _SSL_CONTEXT


def make_openai_client(openai_cls: Any, base_url: Optional[str], api_key: Optional[str],
                       timeout: float = 600.0) -> Any:
    """An SDK client of our own (so ``interrupt()`` may cut its connections), SDK retries off:
    the loop retries with its own backoff and error classes."""
    import openai

    client = openai_cls(base_url=base_url, api_key=api_key or "no-key", max_retries=0,
                        timeout=timeout,
                        http_client=openai.DefaultHttpxClient(verify=shared_ssl_context()))
    if openai_cls is openai.OpenAI and not proxied():  # a patched class keeps its own create()
        setattr(client, WIRE_ATTR, DirectWire(shared_ssl_context()))
    return client
