"""Credential pools (issue 25): a pool of 3 keys where two fail (401 and 429) still answers, the
dead key is parked, and `hermes auth list|add|remove` shows keys masked. Real loopback servers
and real `hermes` subprocesses."""
from __future__ import annotations

from agent.providers.key_pool import KeyRing
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_anthropic import text as claude_text
from tests.fake_provider import error, text


def test_a_pool_of_three_where_two_fail(fake_anthropic, hermes_home, monkeypatch, tmp_path):
    from run_agent import AIAgent

    keys = ["sk-ant-dead-000000001", "sk-ant-busy-000000002", "sk-ant-good-000000003"]
    monkeypatch.setenv("ANTHROPIC_API_KEYS", ",".join(keys))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    fake_anthropic.key_status = {keys[0]: 401, keys[1]: 429}
    fake_anthropic.default = claude_text("answered")
    notes = []
    agent = AIAgent(provider="anthropic", model="claude-fake-1", quiet_mode=True,
                    skip_context_files=True, cwd=str(tmp_path),
                    status_callback=lambda kind, msg: notes.append(msg))
    assert agent.run_conversation("hi")["final_response"] == "answered"
    assert fake_anthropic.keys_seen == keys  # no waiting on the 429: the next key at once
    assert not any(k in " ".join(notes) for k in keys)  # masked in what is said
    fake_anthropic.key_status = {keys[0]: 401}  # the busy one is fine again; the dead one parked
    assert agent.run_conversation("again")["final_response"] == "answered"
    assert fake_anthropic.keys_seen[3:] == [keys[2]]


def test_openai_keys_rotate_on_401_through_the_cli(fake_provider, hermes_home):
    def reply(body):
        auth = fake_provider.request_headers[-1].get("authorization", "")
        return error(401, "Incorrect API key", type="invalid_api_key") if "k-one" in auth \
            else text("second key works")

    fake_provider.handler = reply
    env = hermes_env(fake_provider, OPENAI_API_KEY="sk-k-one-1234567890",
                     OPENAI_API_KEYS="sk-k-one-1234567890,sk-k-two-1234567890",
                     HERMES_MODEL="fake-model")
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "second key works"
    auths = [h.get("authorization") for h in fake_provider.request_headers]
    assert auths == ["Bearer sk-k-one-1234567890", "Bearer sk-k-two-1234567890"]


def test_hermes_auth_add_list_remove_masks_keys(hermes_home):
    env = hermes_env(None, OPENAI_API_KEY="sk-env-key-abcdefghijkl")
    add = run_hermes("auth", "add", "openai", "--label", "spare", env=env,
                     input="sk-stored-key-0123456789\n")
    assert add.returncode == 0, add.stderr
    assert "sk-stored-key-0123456789" not in add.stdout and "spare" in add.stdout
    assert (hermes_home / "auth.json").stat().st_mode & 0o077 == 0
    listed = run_hermes("auth", "list", "openai", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "openai: 2 keys" in listed.stdout and "OPENAI_API_KEY" in listed.stdout
    assert "auth.json #1 spare" in listed.stdout
    assert "sk-stored-key-0123456789" not in listed.stdout and "sk-env-key" not in listed.stdout
    again = run_hermes("auth", "add", "openai", "--key", "sk-stored-key-0123456789", env=env)
    assert again.returncode == 2 and "stored for openai already" in again.stderr
    gone = run_hermes("auth", "remove", "openai", "spare", env=env)
    assert gone.returncode == 0, gone.stderr
    assert "openai: 1 key\n" in run_hermes("auth", "list", "openai", env=env).stdout
    bad = run_hermes("auth", "remove", "openai", "7", env=env)
    assert bad.returncode == 2 and "no stored key '7'" in bad.stderr


def test_the_ring_parks_dead_keys_and_tries_each_once():
    ring = KeyRing(["a", "b", "c"])
    assert ring.rotate(dead=True) == "b" and ring.parked == {"a"}
    assert ring.rotate(dead=False) == "c"
    assert ring.rotate(dead=False) is None  # every key tried for this request
    ring.tried.clear()
    assert ring.rotate(dead=False) == "b"  # a is parked for good
