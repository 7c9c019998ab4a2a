"""``AnthropicClient``: the Messages API (on the ``anthropic`` SDK) behind the one call the loop
makes, ``client.chat.completions.create(...)``, answering with OpenAI shapes.

Like the OpenAI path it sends the (already converted) body through ``extra_body`` so the SDK does
not walk every message through its parameter transformer, and reads non-streamed answers as raw
JSON instead of building the SDK's models: the turn's overhead stays that of the OpenAI path.
SDK retries are off (the loop retries, with the provider's ``Retry-After``); ``abort()`` cuts the
request in flight (``AIAgent.interrupt``).
"""
from __future__ import annotations

import importlib
import json
from types import SimpleNamespace
from typing import Any, Iterator, Optional

from agent.providers.anthropic import history_cache, thinking
from agent.providers.anthropic.convert import build_request
from agent.providers.anthropic.errors import stream_error, translate
from agent.providers.anthropic.replies import StreamTranslator, completion
from agent.providers.openai_compat import shared_ssl_context

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 8192
_SHORT_OUTPUT = ("claude-3-opus", "claude-3-sonnet", "claude-3-haiku")  # 4096 output tokens
EFFORT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}


def sdk_base_url(url: Optional[str]) -> str:
    """The SDK wants the host root (it adds /v1/messages); a configured URL may end in /v1."""
    root = (url or ANTHROPIC_BASE_URL).rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def max_output_for(model: str) -> int:
    low = (model or "").lower()
    return 4096 if any(low.startswith(p) for p in _SHORT_OUTPUT) else DEFAULT_MAX_TOKENS


def thinking_budget(effort: Optional[str]) -> Optional[int]:
    """``agent.reasoning_effort`` (Hermes' key) as a thinking budget; unset or none: off."""
    return EFFORT_BUDGETS.get(str(effort or "").strip().lower())


class AnthropicClient:
    """One SDK client; lent to one request at a time by the process's client pool."""

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None,
                 timeout: float = 600.0, reasoning_effort: Optional[str] = None,
                 cache: bool = True) -> None:
        import anthropic

        self._sdk = anthropic.Anthropic(
            api_key=api_key or "no-key", base_url=sdk_base_url(base_url), max_retries=0,
            timeout=timeout, http_client=anthropic.DefaultHttpxClient(verify=shared_ssl_context()))
        self._client = self._sdk._client  # its HTTP pool: what abort_connections cuts
        # the SDK answers with the raw response when asked for its HTTP library's Response type
        base = next(c for c in type(self._client).__mro__
                    if not c.__module__.startswith("anthropic"))
        self._response_type = importlib.import_module(base.__module__.split(".")[0]).Response
        self.thinking_budget = thinking_budget(reasoning_effort)
        self.cache = cache
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, *, model: str, messages: Optional[list] = None, tools: Any = None,
               tool_choice: Any = None, stream: bool = False, max_tokens: Optional[int] = None,
               temperature: Optional[float] = None, timeout: Optional[float] = None,
               extra_body: Optional[dict] = None, **_openai_only: Any) -> Any:
        """``chat.completions.create`` with OpenAI arguments; a ``chat.completion`` dict, or an
        iterator of ``chat.completion.chunk`` dicts when ``stream``."""
        extra = dict(extra_body or {})
        body = build_request(extra.pop("messages", None) or messages or [], model=model,
                             max_tokens=max_tokens or max_output_for(model),
                             tools=extra.pop("tools", None) or tools,
                             tool_choice=extra.pop("tool_choice", None) or tool_choice,
                             thinking_budget=self.thinking_budget, temperature=temperature,
                             thinking=thinking.recall, cache=self.cache,
                             converter=history_cache.convert)
        try:
            if stream:
                return self._translated(self._post({**body, "stream": True}, timeout, True))
            raw = self._post(body, timeout, False)
        except Exception as exc:
            mapped = translate(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        data = json.loads(raw.content)
        calls = [b.get("id") for b in data.get("content") or [] if b.get("type") == "tool_use"]
        thinking.remember(calls, [b for b in data.get("content") or []
                                  if b.get("type") in ("thinking", "redacted_thinking")])
        return completion(data)

    def _post(self, body: dict, timeout: Optional[float], stream: bool) -> Any:
        """POST the body as ready JSON bytes: ``messages.create`` would walk and copy the whole
        body (every message of the history) on each request, ~20 ms at 400 messages. The SDK
        still adds its headers, key and version, and raises its errors; the answer comes back
        raw (an HTTP response, or the SDK's event stream)."""
        import anthropic

        options: dict[str, Any] = {"headers": {"Content-Type": "application/json"}}
        if timeout:
            options["timeout"] = timeout
        if stream:
            return self._sdk.post("/v1/messages", content=json.dumps(body).encode(),
                                  options=options, cast_to=anthropic.types.Message, stream=True,
                                  stream_cls=anthropic.Stream[
                                      anthropic.types.RawMessageStreamEvent])
        return self._sdk.post("/v1/messages", content=json.dumps(body).encode(), options=options,
                              cast_to=self._response_type)

    def _translated(self, events: Any) -> Iterator[dict]:
        tr = StreamTranslator()
        try:
            for event in events:
                yield from tr.feed(event)
        except Exception as exc:
            mapped = stream_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        finally:
            close = getattr(events, "close", None)
            if callable(close):
                close()
        thinking.remember(tr.tool_ids, tr.thinking)

    def close(self) -> None:
        self._sdk.close()


def make_client(settings: Any) -> AnthropicClient:
    """The provider factory: ``ProviderSettings`` -> a client."""
    return AnthropicClient(settings.base_url, settings.api_key,
                           reasoning_effort=getattr(settings, "reasoning_effort", None))
