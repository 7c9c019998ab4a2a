"""Run one batch of tool calls: independent calls in parallel, results in call order.

Malformed calls (bad JSON, unknown tool, wrong arguments) become tool error messages the model can
correct; a tool never crashes the turn.
"""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

MAX_PARALLEL = 8
MAX_RESULT_CHARS = 100_000


def _error(message: str) -> str:
    return json.dumps({"error": message})


def parse_arguments(raw: Any) -> tuple[Optional[dict], Optional[str]]:
    """(args, None) or (None, an error the model can act on)."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw, strict=False)  # a raw newline inside a string: models emit them
    except (TypeError, ValueError) as exc:
        return None, f"arguments are not valid JSON ({exc}); resend the call with a JSON object"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}; resend the call"
    return value, None


def _cap(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    half = MAX_RESULT_CHARS // 2
    cut = len(text) - MAX_RESULT_CHARS
    return (f"{text[:half]}\n[... {cut:,} characters cut from the middle of this result ...]\n"
            f"{text[-half:]}")


def run_one(call: dict, known: set[str], dispatch: Callable[[str, dict], str],
            progress: Optional[Callable[[dict], None]], redact: Callable[[str], str] = str) -> str:
    fn = call.get("function") or {}
    name = fn.get("name") or ""
    args, problem = parse_arguments(fn.get("arguments"))
    if name not in known:
        avail = ", ".join(sorted(known)) or "none"
        return _error(f"unknown tool '{name}'; available tools: {avail}")
    if problem:
        return _error(f"{name}: {problem}")
    call_id = str(call.get("id") or "")
    _emit(progress, {"type": "tool_start", "id": call_id, "name": name, "args": args})
    started = time.monotonic()
    ok = True
    try:
        result = dispatch(name, args)
        if not isinstance(result, str):
            result = json.dumps(result, default=str)
    except Exception as exc:  # ToolError and anything a tool raises
        ok = False
        result = _error(f"{name}: {exc}" if str(exc) else f"{name} failed: {type(exc).__name__}")
    # secrets are masked before anything (progress, provider, store) sees them
    result = _cap(redact(result))
    summary = result if len(result) <= 120 else result[:117] + "..."
    _emit(progress, {"type": "tool_end", "id": call_id, "name": name, "args": args, "ok": ok,
                     "summary": summary.replace("\n", " "), "duration": time.monotonic() - started})
    return result


def _serialized(fn: Callable[..., Any]) -> Callable[..., Any]:
    lock = threading.Lock()

    def call(*args: Any) -> Any:
        with lock:
            return fn(*args)

    return call


def _emit(progress: Optional[Callable[[dict], None]], event: dict) -> None:
    if progress is None:
        return
    try:
        progress(event)
    except Exception:
        pass


def run_tool_calls(calls: list[dict], known: set[str], dispatch: Callable[[str, dict], str],
                   progress: Optional[Callable[[dict], None]] = None,
                   redact: Callable[[str], str] = str) -> list[dict]:
    """Tool result messages, one per call, in call order. Progress events of parallel calls are
    delivered one at a time (callers need not be thread-safe)."""
    if len(calls) == 1:
        outputs = [run_one(calls[0], known, dispatch, progress, redact)]
    else:
        if progress is not None:
            progress = _serialized(progress)
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(calls)),
                                thread_name_prefix="hermes-tool") as pool:
            outputs = list(pool.map(lambda c: run_one(c, known, dispatch, progress, redact), calls))
    return [
        {"role": "tool", "tool_call_id": call.get("id") or "", "content": out}
        for call, out in zip(calls, outputs)
    ]
