"""One factory builds every agent (issue 22): ``agent.factory.build_agent(AgentSpec)`` is the only
``AIAgent(...)`` call in the product, a spec arrives whole on the agent, and the callbacks are one
``AgentHooks`` object that Hermes' keyword callbacks still fill in."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import run_agent
from agent.callbacks import AgentHooks, StatusKind
from agent.factory import AgentSpec, ProviderChoice, build_agent
from hermes_core.config import HermesConfig
from hermes_core.provider_settings import resolve_provider
from tests.fake_provider import server_error, text

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("agent", "cron", "gateway", "hermes_cli", "hermes_core", "hermes_state", "tools",
           "acp_agent", "dashboard", "mcp_server")


def _aiagent_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and ((isinstance(n.func, ast.Name) and n.func.id == "AIAgent")
                 or (isinstance(n.func, ast.Attribute) and n.func.attr == "AIAgent"))]


def test_no_product_module_builds_an_aiagent_but_the_factory():
    sites = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = _aiagent_calls(path)
            if lines:
                sites[str(path.relative_to(ROOT))] = lines
    assert list(sites) == ["agent/factory.py"], sites
    assert _aiagent_calls(ROOT / "run_agent.py") == []


def test_a_spec_arrives_whole_on_the_agent(fake_provider, tmp_path):
    hooks = AgentHooks(status=lambda kind, message: None)
    spec = AgentSpec(
        config=HermesConfig(), platform="telegram", session_db=False,
        provider=ProviderChoice(base_url=fake_provider.base_url, api_key="k", model="fake-model",
                                context_length=50_000),
        enabled_toolsets=["file"], cwd=tmp_path, confine_to=tmp_path, mutating_tools="deny",
        owner="telegram:42", origin={"platform": "telegram", "chat_id": "42"}, hooks=hooks,
        skip_memory=True, skip_context_files=True, max_iterations=4)
    agent = build_agent(spec)
    assert isinstance(agent, run_agent.AIAgent)
    assert agent.hooks is hooks and agent.status_callback is hooks.status
    assert (agent.owner, agent.origin, agent.platform) == ("telegram:42", spec.origin, "telegram")
    assert agent.cwd == tmp_path and agent.confine_to == tmp_path
    assert agent.mutating_tools == "deny" and agent.max_iterations == 4 and agent.skip_memory
    assert agent.model == "fake-model" and agent.base_url == fake_provider.base_url
    assert agent.context_compressor.context_length == 50_000
    assert {t["function"]["name"] for t in agent.tools} <= {"read_file", "write_file", "patch",
                                                            "search_files"}
    assert agent.session_db is None  # session_db=False: stores nothing
    defaults = build_agent(AgentSpec(config=HermesConfig(), provider=spec.provider))
    assert defaults.max_iterations == 90 and defaults.owner is None and defaults.quiet_mode


def test_provider_choices_from_settings_and_from_another_agent(fake_provider):
    settings = resolve_provider(HermesConfig(), base_url=fake_provider.base_url, api_key="k",
                                model="m1")
    assert ProviderChoice.of(settings) == ProviderChoice(
        provider=settings.provider, base_url=fake_provider.base_url, api_key="k", model="m1")
    assert ProviderChoice.of(settings, "m2").model == "m2"
    parent = build_agent(AgentSpec(config=HermesConfig(), provider=ProviderChoice.of(settings)))
    assert ProviderChoice.like(parent) == ProviderChoice(
        provider=parent.provider, base_url=fake_provider.base_url, api_key="k", model="m1")


def test_settings_resolved_by_a_surface_arrive_whole(fake_provider):
    """A surface resolves once (the gateway, per process); its agents take those settings as
    they are, the key pool included, and do not resolve the environment and auth.json again."""
    settings = resolve_provider(HermesConfig(), base_url=fake_provider.base_url, api_key="k1",
                                model="m1").model_copy(update={"api_keys": ["k1", "k2"]})
    agent = build_agent(AgentSpec(config=HermesConfig(), provider=ProviderChoice.of(settings)))
    assert agent.provider_settings.api_keys == ["k1", "k2"]
    other = build_agent(AgentSpec(config=HermesConfig(),
                                  provider=ProviderChoice.of(settings, "m2")))
    assert other.model == "m2" and other.provider_settings.api_keys == ["k1", "k2"]
    assert settings.model == "m1"  # the surface's own settings are not changed


def test_hermes_keyword_callbacks_become_the_hooks_object(make_agent):
    def status(kind, message):
        return None

    def approve(command, reason):
        return "deny"

    agent = make_agent(status_callback=status, approval_callback=approve)
    assert agent.hooks.status is status and agent.hooks.approval is approve
    assert agent.tool_progress_callback is None and agent.hooks.tool_progress is None
    seen = []
    agent.tool_progress_callback = seen.append  # Hermes code sets them on the agent
    agent.reasoning_callback = seen.append
    assert agent.hooks.tool_progress == seen.append and agent.hooks.reasoning == seen.append
    hooks = AgentHooks(status=status)
    assert make_agent(hooks=hooks).hooks is hooks
    with pytest.raises(TypeError, match="hooks= and status_callback"):
        make_agent(hooks=hooks, status_callback=status)


def test_status_kinds_are_the_strings_hermes_callbacks_compare(make_agent, fake_provider,
                                                               monkeypatch):
    assert [k.value for k in StatusKind] == ["warning", "compression", "retry", "info"]
    assert StatusKind.WARNING == "warning" and json.dumps(StatusKind.RETRY) == '"retry"'
    assert f"{StatusKind.INFO}" == "info"
    monkeypatch.setattr(run_agent, "jittered_backoff", lambda *a, **k: 0)
    lines = []
    fake_provider.queue(server_error(503), text("after retry"))
    agent = make_agent(hooks=AgentHooks(status=lambda kind, msg: lines.append((kind, msg))))
    assert agent.run_conversation("hi")["completed"]
    assert [kind for kind, _ in lines] == ["retry"] and type(lines[0][0]) is StatusKind


def test_a_failing_status_hook_falls_back_to_the_log(make_agent, fake_provider, monkeypatch,
                                                     caplog):
    def broken(kind, message):
        raise RuntimeError("display gone")

    monkeypatch.setattr(run_agent, "jittered_backoff", lambda *a, **k: 0)
    fake_provider.queue(server_error(503), text("fine"))
    with caplog.at_level("INFO", logger="hermes.agent"):
        assert make_agent(hooks=AgentHooks(status=broken)).run_conversation("hi")["completed"]
    assert any("retrying" in r.getMessage() for r in caplog.records)


def test_the_stream_hook_streams_when_the_turn_gets_no_stream_callback(make_agent, fake_provider):
    deltas = []
    fake_provider.queue(text("streamed words arrive in pieces"))
    result = make_agent(hooks=AgentHooks(stream=deltas.append)).run_conversation("hi")
    assert len(deltas) > 1 and "".join(deltas) == result["final_response"]
    assert fake_provider.requests[0]["stream"] is True
