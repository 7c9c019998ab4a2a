"""Auxiliary models (issue 25): ``auxiliary.summary|vision|review`` send compression's summaries,
vision questions and the skill review to their own provider and model (an OpenAI-compatible one
or the native Anthropic one), never to the main endpoint; unset, they are the main model; junk is
refused when the agent is built, with the key to fix named."""
from __future__ import annotations

import pytest

from hermes_core.auxiliary import resolve_auxiliary
from hermes_core.config import ConfigError, parse_config
from hermes_core.provider_settings import resolve_provider
from tests import fake_anthropic as fa_replies
from tests.conftest import write_config
from tests.fake_provider import text, tool_calls
from tests.test_compression_e2e import SUMMARY, seeded_session, summary_requests
from tests.web_server import make_png


@pytest.fixture
def aux(aux_provider):
    """The auxiliary endpoint (tests/conftest.py's second loopback server), answering summaries."""
    aux_provider.default = text(SUMMARY)
    return aux_provider


@pytest.fixture
def png(tmp_path):
    path = tmp_path / "red.png"
    path.write_bytes(make_png(4, 4))
    return path


def main_settings(fp):
    return resolve_provider(parse_config({}), base_url=fp.base_url, api_key="main-key",
                            model="fake-model")


def test_summary_goes_to_auxiliary_summary_not_the_main_endpoint(make_agent, fake_provider, aux,
                                                                  hermes_home):
    write_config(hermes_home, f"auxiliary:\n  summary:\n    base_url: {aux.base_url}\n"
                              "    api_key: aux-key\n    model: sum-1\n"
                              "  compression:\n    model: older-name-loses\n")
    out = make_agent(session_id=seeded_session(10, size=300)).compress()
    assert out["compressed"]
    assert [b["model"] for b in aux.requests] == ["sum-1"]
    assert aux.request_headers[0]["authorization"] == "Bearer aux-key"
    assert summary_requests(fake_provider) == []


def test_summary_on_native_anthropic(make_agent, fake_provider, fake_anthropic, hermes_home):
    fake_anthropic.default = fa_replies.text(SUMMARY)
    write_config(hermes_home, "auxiliary:\n  summary:\n    provider: anthropic\n"
                              f"    base_url: {fake_anthropic.base_url}\n    api_key: ak-1\n"
                              "    model: claude-sum\n")
    assert make_agent(session_id=seeded_session(10, size=300)).compress()["compressed"]
    assert [b["model"] for b in fake_anthropic.requests] == ["claude-sum"]
    assert "hand-off notes" in str(fake_anthropic.requests[0]["system"])
    assert summary_requests(fake_provider) == []


def test_vision_inside_a_turn_asks_auxiliary_vision_on_anthropic(make_agent, fake_provider,
                                                                  fake_anthropic, hermes_home,
                                                                  png):
    fake_anthropic.default = fa_replies.text("A red square.")
    write_config(hermes_home, "auxiliary:\n  vision:\n    provider: anthropic\n"
                              f"    base_url: {fake_anthropic.base_url}\n    api_key: ak-2\n"
                              "    model: claude-eyes\n")
    fake_provider.queue(tool_calls([("vision_analyze", {"image": str(png)})]), text("It is red."))
    res = make_agent().run_conversation("what is in red.png?")
    assert res["final_response"] == "It is red."
    (asked,) = fake_anthropic.requests
    assert asked["model"] == "claude-eyes"
    blocks = asked["messages"][0]["content"]
    assert any(b["type"] == "image" and b["source"]["media_type"] == "image/png" for b in blocks)
    assert len(fake_provider.requests) == 2  # the turn's two requests; no image went there
    tool_msg = [m for m in fake_provider.requests[1]["messages"] if m["role"] == "tool"][0]
    assert tool_msg["content"] == "A red square."


def test_skill_review_runs_on_auxiliary_review(make_agent, fake_provider, aux, hermes_home):
    from agent import skill_review as review

    write_config(hermes_home, "skills: {creation_nudge_interval: 2}\nauxiliary:\n  review:\n"
                              f"    base_url: {aux.base_url}\n    model: reviewer-1\n")
    aux.default = text("Nothing to save.")
    todo = ("todo", {"todos": [{"id": "1", "content": "step"}]})
    fake_provider.queue(tool_calls([todo, todo]), text("done"))
    agent = make_agent()
    res = agent.run_conversation("work")
    started = review.after_turn(agent, res)
    assert started is not None
    started.join(30)
    assert [b["model"] for b in aux.requests] == ["reviewer-1"]
    assert review.INSTRUCTIONS in aux.requests[0]["messages"][0]["content"]
    assert len(fake_provider.requests) == 2  # the user's turn only


def test_unset_roles_are_the_main_model(fake_provider):
    main = main_settings(fake_provider)
    for cfg in ({}, {"auxiliary": {"vision": {"provider": "auto", "model": ""}}}):
        for role in ("summary", "vision", "review"):
            assert resolve_auxiliary(parse_config(cfg), role, main) is main


def test_a_model_alone_keeps_the_main_endpoint_and_key(fake_provider):
    main = main_settings(fake_provider)
    got = resolve_auxiliary(parse_config({"auxiliary": {"review": {"model": "small-1"}}}),
                            "review", main)
    assert (got.base_url, got.api_key, got.model) == (main.base_url, "main-key", "small-1")


def test_the_older_compression_name_is_summary(fake_provider):
    main = main_settings(fake_provider)
    cfg = parse_config({"auxiliary": {"compression": {"model": "old-sum"}}})
    assert resolve_auxiliary(cfg, "summary", main).model == "old-sum"


def test_hermes_background_review_name_is_review_and_review_wins(fake_provider):
    main = main_settings(fake_provider)
    alone = parse_config({"auxiliary": {"background_review": {"model": "bg-1"}}})
    assert resolve_auxiliary(alone, "review", main).model == "bg-1"
    both = parse_config({"auxiliary": {"background_review": {"model": "bg-1"},
                                       "review": {"model": "rv-1"}}})
    assert resolve_auxiliary(both, "review", main).model == "rv-1"
    bad = parse_config({"auxiliary": {"background_review": {"provider": "nosuch"}}})
    with pytest.raises(ConfigError, match="auxiliary.background_review.provider"):
        resolve_auxiliary(bad, "review", main)


@pytest.mark.parametrize("section, words", [
    ({"review": {"provider": "nosuch"}}, ["auxiliary.review.provider", "unknown provider"]),
    ({"vision": {"provider": "anthropic", "model": "c"}}, ["auxiliary.vision", "ANTHROPIC_API_KEY"]),
])
def test_junk_is_refused_when_the_agent_is_built(make_agent, fake_provider, hermes_home,
                                                 monkeypatch, section, words):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    import yaml

    write_config(hermes_home, yaml.safe_dump({"auxiliary": section}))
    with pytest.raises(ConfigError) as err:
        make_agent()
    assert all(w in str(err.value) for w in words), str(err.value)
    assert fake_provider.requests == []


def test_junk_auxiliary_is_one_line_from_the_cli(fake_provider, hermes_home):
    from tests.cli.conftest import hermes_env, run_hermes

    write_config(hermes_home, "auxiliary:\n  summary:\n    provider: nosuch\n")
    proc = run_hermes("-z", "hi", env=hermes_env(fake_provider))
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("hermes: error: ") and "auxiliary.summary.provider" in line
    assert fake_provider.requests == []


def test_the_roles_are_known_keys(hermes_home):
    from tests.cli.conftest import hermes_env, run_hermes

    write_config(hermes_home, "auxiliary:\n  summary: {model: s}\n  review: {model: r}\n"
                              "  vision: {model: v}\n")
    proc = run_hermes("sessions", "list", env=hermes_env())
    assert proc.returncode == 0 and "unknown key" not in proc.stderr, proc.stderr
