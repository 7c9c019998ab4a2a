"""The seam between the turn and its host (issue 22): ``agent.host.TurnHost`` is exactly what the
loop modules touch, ``AIAgent`` implements all of it, and a host that is not an AIAgent runs a
turn through the same loop."""
from __future__ import annotations

import ast
import inspect
import threading
from pathlib import Path
from typing import Any, Optional

from agent.callbacks import StatusKind
from agent.conversation_loop import run_loop
from agent.host import TurnHost
from agent.providers.openai_compat import ModelReply
from agent.request_view import RequestView
from agent.turn_context import build_turn, preflight_compress

ROOT = Path(__file__).resolve().parents[1]
LOOP_MODULES = ("turn_context", "conversation_loop", "conversation_compression", "results",
                "plugin_hooks")


def _members() -> set[str]:
    names = set(TurnHost.__annotations__)
    names |= {n for n, v in vars(TurnHost).items()
              if not n.startswith("__") and (callable(v) or isinstance(v, property))}
    return names - {"_is_protocol", "_is_runtime_protocol"}


def _agent_nodes(tree: ast.AST) -> list[ast.Attribute]:
    """Attribute reads/writes on the host: ``agent.X`` and ``state.agent.X``."""
    def is_host(node: ast.AST) -> bool:
        return ((isinstance(node, ast.Name) and node.id == "agent")
                or (isinstance(node, ast.Attribute) and node.attr == "agent"
                    and isinstance(node.value, ast.Name) and node.value.id == "state"))

    return [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and is_host(n.value)]


def test_the_loop_touches_only_turn_host_members():
    members = _members()
    used: dict[str, set[str]] = {}
    for mod in LOOP_MODULES:
        tree = ast.parse((ROOT / "agent" / f"{mod}.py").read_text())
        for node in _agent_nodes(tree):
            used.setdefault(node.attr, set()).add(mod)
    strangers = {name: mods for name, mods in used.items() if name not in members}
    assert not strangers, f"the loop uses host names outside TurnHost: {strangers}"
    assert {"call_model_api", "_compress_context", "_persist_session", "emit_status"} <= set(used)


def test_the_loop_probes_its_host_only_for_the_lock_skip_signal():
    probes = []
    for mod in LOOP_MODULES:
        tree = ast.parse((ROOT / "agent" / f"{mod}.py").read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr", "setattr") and node.args
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "agent"):
                probes.append((mod, ast.literal_eval(node.args[1])))
    assert probes == [("conversation_compression", "_compression_skipped_due_to_lock")]


def test_the_loop_functions_take_a_turn_host_not_any():
    untyped = []
    for mod in LOOP_MODULES:
        tree = ast.parse((ROOT / "agent" / f"{mod}.py").read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for arg in fn.args.args:
                if arg.arg == "agent" and ast.unparse(arg.annotation or ast.Name("?")) != "TurnHost":
                    untyped.append(f"{mod}.{fn.name}: {ast.unparse(arg.annotation or ast.Name('?'))}")
    # the seed passes SimpleNamespace and MagicMock objects to the signal's reader
    assert untyped == ["conversation_compression.compression_skipped_due_to_lock: object"]


def test_aiagent_implements_every_member_with_the_protocols_parameters(make_agent):
    from run_agent import AIAgent

    agent = make_agent()
    assert isinstance(agent, TurnHost)
    for name in _members():
        assert hasattr(agent, name), name
        spec = inspect.getattr_static(TurnHost, name, None)
        if callable(spec) and not isinstance(spec, property):
            want = list(inspect.signature(spec).parameters)
            got = list(inspect.signature(inspect.getattr_static(AIAgent, name)).parameters)
            assert got == want, (name, got, want)
    assert isinstance(agent.interrupt_event, threading.Event)


class ScriptedHost:
    """A host that is not an AIAgent: replies from a list, tools that echo, history in memory."""

    def __init__(self, replies: list[ModelReply]) -> None:
        self.model, self.base_url, self.platform = "scripted", None, "test"
        self.tools: list[dict] = [{"type": "function", "function": {"name": "echo"}}]
        self.messages: list[dict] = []
        self.max_iterations = 5
        self.compression_enabled = False
        self.max_compression_attempts = 3
        self.context_compressor: Any = None
        self.usage_baseline: Optional[tuple[int, int]] = None
        self.request_view = RequestView()
        self._compression_skipped_due_to_lock: Any = None
        self.session_id, self.session_db, self.lease_lost = "s1", None, None
        self.interrupt_event = threading.Event()
        self.replies = replies
        self.persisted: list[int] = []
        self.statuses: list[tuple[str, str]] = []

    def history(self) -> list[dict]:
        return self.messages

    def adopt_history(self, messages: list[dict]) -> None:
        self.messages = messages

    def system_prompt(self) -> str:
        return "You are scripted."

    def call_model_api(self, api_messages: list[dict], state: Any) -> ModelReply:
        assert api_messages[0] == {"role": "system", "content": "You are scripted."}
        return self.replies.pop(0)

    def record_usage(self, state: Any, reply: ModelReply) -> None:
        state.prompt_tokens += reply.prompt_tokens or 0

    def learn_context_limit(self, limit: int, lower_only: bool = True,
                            announce: bool = True) -> None:
        raise AssertionError("no window to learn here")

    def run_tools(self, tool_calls: list[dict], state: Any) -> list[dict]:
        return [{"role": "tool", "tool_call_id": c["id"], "content": c["function"]["arguments"]}
                for c in tool_calls]

    def _compress_context(self, messages: list, system_message: str,
                          **kwargs: Any) -> tuple[list, str]:
        raise AssertionError("compression is off")

    def commit_compaction(self, old: list[dict], new: list[dict],
                          lock_holder: Optional[str] = None) -> None:
        raise AssertionError("compression is off")

    def refresh_memory_snapshot(self, system_prompt: str) -> str:
        return system_prompt

    def _persist_session(self, messages: list[dict]) -> None:
        self.persisted.append(len(messages))

    def emit_status(self, kind: StatusKind, message: str) -> None:
        self.statuses.append((kind, message))

    def redact(self, text: str) -> str:
        return text

    def api_key_setting(self) -> str:
        return "NO_KEY"


def test_a_host_that_is_not_an_aiagent_runs_a_turn_with_tools():
    call = {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    host = ScriptedHost([ModelReply(content=None, tool_calls=[call], prompt_tokens=7),
                         ModelReply(content="done", prompt_tokens=9)])
    assert isinstance(host, TurnHost)
    state = build_turn(host, "go", None, None, None, None)
    preflight_compress(host, state)
    result = run_loop(host, state)
    assert result["completed"] and result["final_response"] == "done"
    assert result["prompt_tokens"] == 16 and result["session_id"] == "s1"
    assert [m["role"] for m in result["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert host.persisted == [2, 3, 4]  # after the reply, after the tools, after the answer
