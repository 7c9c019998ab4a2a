"""The agent's tools, for a script run by ``execute_code``: ``from hermes_tools import read_file``.

Each tool is a function taking the tool's parameters as keyword arguments (positional ones in
the order of its schema's ``required`` list: ``read_file("a.txt")``, ``terminal("ls")``). It
returns the tool's answer: parsed JSON when the tool answers JSON (``terminal`` gives a dict
with ``exit_code`` and ``output``), else the text. A refused or failed call raises ``ToolError``
with the tool's message. ``call(name, **args)`` reaches any tool by name; ``TOOLS`` lists them.

Standard library only: this runs in the script's own interpreter (and under the sandbox).
"""
from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any

__all__ = ["TOOLS", "ToolError", "call"]


class ToolError(Exception):
    """A tool refused or failed; the message is the tool's."""


def _names() -> dict[str, list[str]]:
    try:
        return json.loads(os.environ.get("HERMES_TOOLS") or "{}")
    except ValueError:
        return {}


TOOLS: dict[str, list[str]] = _names()  # tool name -> its required parameters, in order
_lock = threading.Lock()
_sock: Any = None
_reader: Any = None
_seq = 0


def _connection() -> tuple[Any, Any]:
    global _sock, _reader
    if _sock is None:
        fd = os.environ.get("HERMES_RPC_FD")
        if not fd:
            raise ToolError("hermes_tools works only inside execute_code")
        _sock = socket.socket(fileno=int(fd))
        _reader = _sock.makefile("rb")
    return _sock, _reader


def _request(payload: dict) -> dict:
    global _seq
    with _lock:
        sock, reader = _connection()
        _seq += 1
        payload["id"] = _seq
        sock.sendall(json.dumps(payload).encode("utf-8") + b"\n")
        line = reader.readline()
    if not line:
        raise ToolError("the agent closed the tool connection")
    return json.loads(line)


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call tool ``name``; the answer as JSON when it parses, else the text."""
    required = TOOLS.get(name)
    if required is None:
        raise ToolError(f"unknown tool {name!r}; available here: {', '.join(sorted(TOOLS))}")
    if len(args) > len(required):
        raise ToolError(f"{name} takes at most {len(required)} positional arguments")
    kwargs.update(zip(required, args))
    answer = _request({"tool": name, "args": kwargs})
    if not answer.get("ok"):
        raise ToolError(str(answer.get("error") or "the tool failed"))
    result = answer.get("result")
    if isinstance(result, str) and result[:1] in "{[":
        try:
            return json.loads(result)
        except ValueError:
            pass
    return result


def fetch_code() -> str:
    """The script's source, from the agent (so no file is written anywhere)."""
    answer = _request({"op": "code"})
    return str(answer.get("code") or "")


def __getattr__(name: str) -> Any:  # `from hermes_tools import read_file`
    if name in TOOLS:
        return lambda *args, **kwargs: call(name, *args, **kwargs)
    raise AttributeError(f"hermes_tools has no tool {name!r}; available here: "
                         f"{', '.join(sorted(TOOLS))}")
