"""What the embedded model is asked and how its answers are shaped. Pure: no llama, no I/O.

Both sides of the embedded model's pipe use this: the parent turns an agent request into a small
JSON-safe payload (messages rewritten for a chat template, the tool choice, sampling options), and
the child shapes llama's output into OpenAI-style dicts, which the parent wraps for attribute
access. Keeping the rewriting in the parent means the child never sees SDK objects.
"""
from __future__ import annotations

import json
import time
import uuid
from types import SimpleNamespace
from typing import Any, Optional

from hermes_core.messages import content_text
from agent.providers.tool_echo import render_call, render_result

DEFAULT_MAX_TOKENS = 1024  # a small model left unbounded can ramble to the end of its window
# Greedy by default: the same question gets the same answer on every run and every machine of the
# same build (tests and users alike); config model.temperature makes it sample.
DEFAULT_TEMPERATURE = 0.0
GEN_KEYS = ("temperature", "top_p", "top_k", "min_p", "stop", "presence_penalty",
            "frequency_penalty", "repeat_penalty", "seed")


def field(obj: Any, key: str, default: Any = None) -> Any:
    """Messages may be dicts or objects (an openai message appended as-is); read either."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def plain(x: Any) -> Any:
    """SimpleNamespace trees (and SDK-like objects with ``model_dump``) as plain dicts and lists."""
    if isinstance(x, SimpleNamespace):
        return {k: plain(v) for k, v in vars(x).items()}
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    dump = getattr(x, "model_dump", None)
    return plain(dump()) if callable(dump) else x


def call_parts(call: Any) -> tuple[str, str]:
    fn = field(call, "function") or {}
    args = field(fn, "arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return str(field(fn, "name", "") or ""), args or "{}"


def prepare_messages(messages: list, native_tool_calls: bool) -> list[dict]:
    """Rewrite an agent history into messages every template renders: system/user/assistant with
    str content.

    Tool results become user messages ("Tool result (name): ..."). Assistant tool calls are kept as
    structured ``tool_calls`` for the function-calling template (which renders them itself) and as
    text otherwise.
    """
    out: list[dict] = []
    names: dict[str, str] = {}
    for m in messages or []:
        role = field(m, "role") or "user"
        text = content_text(field(m, "content"), placeholders=True)
        if role in ("system", "developer"):
            out.append({"role": "system", "content": text})
        elif role == "assistant":
            out.append(_assistant(m, text, names, native_tool_calls))
        elif role in ("tool", "function"):
            name = field(m, "name") or names.get(str(field(m, "tool_call_id", "")), "") or "tool"
            out.append({"role": "user", "content": render_result(name, text)})
        else:
            out.append({"role": "user", "content": text})
    return out


def _assistant(m: Any, text: str, names: dict[str, str], native: bool) -> dict:
    calls = field(m, "tool_calls") or []
    parts = [call_parts(c) for c in calls]
    for c, (name, _) in zip(calls, parts):
        names[str(field(c, "id", ""))] = name
    if parts and native:
        # that template renders content and calls as two turns; the calls are what matter
        return {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": n, "arguments": a}} for n, a in parts]}
    lines = [text] if text else []
    lines += [render_call(n, a) for n, a in parts]
    return {"role": "assistant", "content": "\n".join(lines)}


def tool_choice(tools: Optional[list], choice: Any) -> Any:
    """openai's tool_choice -> what the grammar handler supports ("auto" or a named tool);
    None = plain chat."""
    if not tools or choice == "none":
        return None
    names = [field(field(t, "function") or {}, "name") for t in tools]
    if isinstance(choice, dict):
        name = field(field(choice, "function") or {}, "name")
        return {"type": "function", "function": {"name": name}} if name in names else "auto"
    if choice == "required" and len(names) == 1:  # the grammar then forces that call
        return {"type": "function", "function": {"name": names[0]}}
    return "auto"  # the grammar lets the model choose between calling and answering


def gen_options(kwargs: dict, seed: Optional[int], temperature: Optional[float]) -> dict:
    """Sampling options llama understands, from a request's keywords and the configured defaults."""
    gen = {k: v for k, v in kwargs.items() if k in GEN_KEYS and v is not None}
    gen.setdefault("temperature", DEFAULT_TEMPERATURE if temperature is None else temperature)
    if seed is not None:
        gen.setdefault("seed", seed)
    if isinstance(gen.get("stop"), str):
        gen["stop"] = [gen["stop"]]
    return gen


# ----------------------------------------------------------------------------- answer shapes

def usage(prompt: int, completion: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def tool_call_dicts(calls: list) -> Optional[list]:
    out = []
    for c in calls or []:
        name, args = call_parts(c)
        out.append({"id": field(c, "id") or f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                    "function": {"name": name, "arguments": args}})
    return out or None


def completion(model: str, content: Optional[str], calls: Optional[list], finish: str,
               use: dict) -> dict:
    msg = {"role": "assistant", "content": content, "tool_calls": calls, "function_call": None,
           "refusal": None}
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
            "usage": use}


def chunk(cid: str, model: str, *, role: Optional[str] = None, content: Optional[str] = None,
          tool_calls: Optional[list] = None, finish: Optional[str] = None,
          use: Optional[dict] = None, no_choices: bool = False) -> dict:
    delta = {"role": role, "content": content, "tool_calls": tool_calls, "function_call": None,
             "refusal": None}
    choices = [] if no_choices else [{"index": 0, "finish_reason": finish, "logprobs": None,
                                      "delta": delta}]
    return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": choices, "usage": use}


def replay(resp: dict, include_usage: bool) -> list[dict]:
    """A finished answer as openai-shaped chunks (the grammar handler cannot stream tool calls)."""
    ch = resp["choices"][0]
    msg, rid, model = ch["message"], resp["id"], resp["model"]
    out = [chunk(rid, model, role="assistant", content="")]
    if msg.get("content"):
        out.append(chunk(rid, model, content=msg["content"]))
    for i, call in enumerate(msg.get("tool_calls") or []):
        out.append(chunk(rid, model, tool_calls=[{"index": i, "id": call["id"], "type": "function",
                                                  "function": dict(call["function"])}]))
    out.append(chunk(rid, model, finish=ch["finish_reason"], use=resp["usage"]))
    if include_usage:
        out.append(chunk(rid, model, use=resp["usage"], no_choices=True))
    return out
