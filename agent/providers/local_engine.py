"""The embedded model itself: a GGUF run by llama-cpp-python. Runs only in the model's child
process.

Why it lives in a child (``local_worker``): llama.cpp is native code; an instruction the CPU lacks
(SIGILL), a segfault or the OOM killer would otherwise take the REPL or the whole gateway with it.

Design notes (why, not what):
- The window defaults to what the model was trained with (``<arch>.context_length`` in the GGUF
  metadata), not a hard-coded number; ``n_ctx`` can only make it smaller.
- A prompt that does not fit raises ``Overflow``; the parent rewords it like a remote 400
  ("maximum context length is N tokens") so the context-overflow path handles it.
- Without tools the model's own chat template formats the prompt (rendered here so the prompt token
  count in ``usage`` is exact, also when streaming). With tools llama-cpp-python's
  grammar-constrained
  ``chatml-function-calling`` handler runs; its "auto" mode ignores ``max_tokens`` and may chain
  calls, so it runs against a proxy that caps the total generated tokens.
- A tiny model produces junk tool calls; they are returned as produced (the loop answers malformed
  calls with a tool error), and its copies of earlier tool-call lines are dropped (``tool_echo``).
- ``cancelled`` (an Event set by the parent's cancel message) stops generation at the next token:
  every completion gets a stopping criterion that reads it.
"""
from __future__ import annotations

import logging
import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from agent.providers import local_messages as lm
from agent.providers.tool_echo import EchoFilter, strip_echoes

log = logging.getLogger(__name__)

_CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
           "{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_OVERFLOW_RE = re.compile(r"Requested tokens \((\d+)\) exceed context window", re.I)


class Overflow(Exception):
    """The prompt does not fit the window (limit, requested tokens)."""

    def __init__(self, limit: int, requested: Optional[int]) -> None:
        super().__init__(limit, requested)
        self.limit, self.requested = limit, requested


@dataclass
class Request:
    """One chat request as the parent sends it (see ``LocalClient``)."""
    messages: list  # already rewritten by local_messages.prepare_messages for the mode
    tools: list
    choice: Any  # None (plain chat), "auto" or {"type": "function", "function": {"name": ...}}
    plain_messages: list  # the same history rewritten for plain chat (fallbacks)
    gen: dict
    budget: int
    stream: bool
    include_usage: bool
    model: str


class Engine:
    """A loaded model; one request at a time (the worker's main thread)."""

    def __init__(self, path: str, n_ctx: Optional[int], n_threads: Optional[int],
                 verbose: bool) -> None:
        t0 = time.monotonic()
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        # n_ctx=0 asks llama.cpp for the trained window
        self.llm = Llama(model_path=path, n_ctx=int(n_ctx or 0), n_threads=n_threads,
                         verbose=verbose)
        md = self.llm.metadata or {}
        arch = md.get("general.architecture", "")
        try:
            self.n_ctx_train = int(md.get(f"{arch}.context_length") or self.llm.n_ctx())
        except (TypeError, ValueError):
            self.n_ctx_train = self.llm.n_ctx()
        eos, bos = self._special(self.llm.token_eos()), self._special(self.llm.token_bos())
        stop_ids = [self.llm.token_eos()] if self.llm.token_eos() >= 0 else None
        self.chatml = Jinja2ChatFormatter(template=_CHATML, eos_token="<|im_end|>", bos_token=bos,
                                          stop_token_ids=stop_ids)
        template = md.get("tokenizer.chat_template")
        self.formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                             stop_token_ids=stop_ids) if template else self.chatml
        self.load_seconds = time.monotonic() - t0
        self.model_name = os.path.splitext(os.path.basename(path))[0]

    def _special(self, token_id: int) -> str:
        if token_id < 0:
            return ""
        return self.llm.detokenize([token_id], special=True).decode("utf-8", "ignore")

    @property
    def context_length(self) -> int:
        return min(self.n_ctx_train, self.llm.n_ctx())

    def info(self) -> dict:
        """What the parent needs to know once: the window, load time, the build's CPU features."""
        import llama_cpp

        return {"context_length": self.context_length, "n_ctx_train": self.n_ctx_train,
                "load_seconds": self.load_seconds, "model_name": self.model_name,
                "pid": os.getpid(),
                "system_info": cpu_features(llama_cpp)}

    # -- requests

    def run(self, req: Request, cancelled: Callable[[], bool]) -> Iterator[dict]:
        """Wire messages for one request: ``{"chunk": ...}``s then nothing, or one
        ``{"result": ...}``."""
        stop = _Cancelled(cancelled)
        if req.choice is not None:
            resp = self._tool_completion(req, stop)
            if req.stream:
                for c in lm.replay(resp, req.include_usage):
                    yield {"chunk": c}
            else:
                yield {"result": resp}
            return
        tokens, kw = self._plain_request(req, stop)
        if req.stream:
            it = self.llm.create_completion(prompt=tokens, stream=True, **kw)
            for c in self._plain_stream(it, len(tokens), req):
                yield {"chunk": c}
            return
        out = self._guard(lambda: self.llm.create_completion(prompt=tokens, **kw))
        ch, u = out["choices"][0], out.get("usage") or {}
        yield {"result": lm.completion(req.model, strip_echoes(ch.get("text") or ""), None,
                                       ch.get("finish_reason") or "stop",
                                       lm.usage(len(tokens), int(u.get("completion_tokens") or 0)))}

    def _guard(self, fn: Callable[[], Any]) -> Any:
        """Call llama and turn its context-window ValueError into ``Overflow``."""
        try:
            return fn()
        except ValueError as exc:
            hit = _OVERFLOW_RE.search(str(exc))
            if hit:
                raise Overflow(self.context_length, int(hit.group(1))) from exc
            raise

    def _plain_request(self, req: Request, stop: "_Cancelled") -> tuple[list[int], dict]:
        """Prompt tokens + create_completion kwargs, formatted with the model's own template.

        ChatML is the fallback when the model has no template or its template rejects the history.
        """
        try:
            res = self.formatter(messages=req.plain_messages)
        except Exception as exc:  # jinja errors, raise_exception() in strict templates
            log.warning("chat template failed (%s); falling back to ChatML", exc)
            res = self.chatml(messages=req.plain_messages)
        extra = ["<|im_end|>"] if "<|im_end|>" in res.prompt else []
        tokens = self.llm.tokenize(res.prompt.encode("utf-8"), add_bos=not res.added_special,
                                   special=True)
        if len(tokens) >= self.context_length:
            raise Overflow(self.context_length, len(tokens))
        stops = [s for s in (res.stop or []) if s] + extra + list(req.gen.get("stop") or [])
        criteria = stop.with_criteria(res.stopping_criteria)
        kw = {**req.gen, "stop": list(dict.fromkeys(stops)), "max_tokens": req.budget,
              "stopping_criteria": criteria}
        return tokens, kw

    def _plain_stream(self, it: Iterator[dict], n_prompt: int, req: Request) -> Iterator[dict]:
        cid, model = f"chatcmpl-{uuid.uuid4().hex}", req.model
        yield lm.chunk(cid, model, role="assistant", content="")
        text, finish = [], "stop"
        echoes = EchoFilter()  # the user never sees a line that only echoes a tool call
        while True:
            try:
                raw = self._guard(lambda: next(it))
            except StopIteration:
                break
            ch = raw["choices"][0]
            if ch.get("text"):
                text.append(ch["text"])
                shown = echoes.feed(ch["text"])
                if shown:
                    yield lm.chunk(cid, model, content=shown)
            finish = ch.get("finish_reason") or finish
        rest = echoes.flush().rstrip()
        if rest:
            yield lm.chunk(cid, model, content=rest)
        joined = "".join(text).encode("utf-8")
        n_out = len(self.llm.tokenize(joined, add_bos=False, special=True)) if text else 0
        use = lm.usage(n_prompt, n_out)
        yield lm.chunk(cid, model, finish=finish, use=use)
        if req.include_usage:
            yield lm.chunk(cid, model, use=use, no_choices=True)

    def _tool_completion(self, req: Request, stop: "_Cancelled") -> dict:
        """Grammar-constrained function calling via llama-cpp-python's chatml-function-calling."""
        from llama_cpp.llama_chat_format import chatml_function_calling

        msgs = list(req.messages)
        # the handler lists tools in the system turn
        if not any(x["role"] == "system" for x in msgs):
            msgs.insert(0, {"role": "system", "content": "You are a helpful assistant."})
        proxy = _BudgetedLlama(self.llm, req.budget, stop)
        try:
            out = self._guard(lambda: chatml_function_calling(
                llama=proxy, messages=msgs, tools=req.tools, tool_choice=req.choice, stream=False,
                max_tokens=req.budget, **req.gen))
        except Overflow:
            raise
        except Exception as exc:  # never fail a turn on what a small model produced
            log.warning("local function calling failed (%s); answering without tools", exc)
            return self._plain_completion(req, stop)
        ch = out["choices"][0]
        msg = ch.get("message") or {}
        calls = lm.tool_call_dicts(msg.get("tool_calls") or [])
        content = strip_echoes(msg.get("content") or "")
        if not calls and not content.strip():
            # a tiny model often picks "message" and then says nothing; answer without the grammar
            return self._plain_completion(req, stop)
        finish = "tool_calls" if calls else (ch.get("finish_reason") or "stop")
        return lm.completion(req.model, content if content or not calls else None, calls, finish,
                             lm.usage(proxy.prompt_tokens or 0, proxy.completion_tokens))

    def _plain_completion(self, req: Request, stop: "_Cancelled") -> dict:
        tokens, kw = self._plain_request(req, stop)
        raw = self._guard(lambda: self.llm.create_completion(prompt=tokens, **kw))
        u = raw.get("usage") or {}
        answer = strip_echoes(raw["choices"][0].get("text") or "")
        return lm.completion(req.model, answer, None, "stop",
                             lm.usage(len(tokens), int(u.get("completion_tokens") or 0)))

    def generate_one(self) -> dict:
        """One token from a one-line prompt: proof that this CPU runs this build
        (``hermes doctor``)."""
        t0 = time.monotonic()
        out = self.llm.create_completion(prompt="Hello", max_tokens=1, temperature=0.0)
        return {"tokens": int((out.get("usage") or {}).get("completion_tokens") or 0),
                "seconds": time.monotonic() - t0}


def cpu_features(llama_cpp: Any) -> str:
    """The CPU features the loaded llama.cpp build uses, e.g. "AVX2 FMA F16C" (enabled ones
    only)."""
    try:
        text = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    except Exception:
        return ""
    on = re.findall(r"(\w+) = 1", text)
    return " ".join(f for f in on if f not in ("LLAMAFILE", "OPENMP", "REPACK"))


class _Cancelled:
    """A llama stopping criterion that is true once the parent cancelled the request."""

    def __init__(self, cancelled: Callable[[], bool]) -> None:
        self.cancelled = cancelled

    def __call__(self, _ids: Any, _logits: Any) -> bool:
        return bool(self.cancelled())

    def with_criteria(self, others: Any) -> Any:
        from llama_cpp import StoppingCriteriaList

        return StoppingCriteriaList([*(others or []), self])


class _BudgetedLlama:
    """What the function-calling handler sees as ``llama``: caps the tokens of all its completions.

    The handler's "auto" mode passes ``max_tokens=None`` and may keep chaining calls; once the
    budget
    is spent, further completions come back empty ("{}" for arguments), which ends its loop.
    Also records the first prompt's size, which is the request's real prompt size, and adds the
    cancel criterion the handler knows nothing about.
    """

    def __init__(self, llm: Any, budget: int, stop: _Cancelled) -> None:
        self._llm, self._left, self._stop = llm, max(1, budget), stop
        self.prompt_tokens: Optional[int] = None
        self.completion_tokens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, prompt: Any, **kw: Any) -> Any:
        if self._left <= 0 or self._stop.cancelled():
            text = "{}" if isinstance(prompt, str) and prompt.endswith(":\n") else ""
            return {"id": "cmpl-budget", "object": "text_completion", "created": int(time.time()),
                    "model": "", "usage": {"prompt_tokens": 0, "completion_tokens": 0,
                                           "total_tokens": 0},
                    "choices": [{"text": text, "index": 0, "logprobs": None,
                                 "finish_reason": "length"}]}
        asked = kw.get("max_tokens")
        kw["max_tokens"] = self._left if not asked or asked <= 0 else min(asked, self._left)
        kw["stream"] = False
        kw["stopping_criteria"] = self._stop.with_criteria(kw.get("stopping_criteria"))
        out = self._llm.create_completion(prompt=prompt, **kw)
        use = out.get("usage") or {}
        if self.prompt_tokens is None:
            self.prompt_tokens = int(use.get("prompt_tokens") or 0)
        spent = int(use.get("completion_tokens") or 0)
        self.completion_tokens += spent
        self._left -= max(1, spent)
        return out
