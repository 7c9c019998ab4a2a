"""The plugin loader on real folders under a temp HERMES_HOME: Hermes-shaped plugins load, a
broken one is named and skipped, third-party plugins wait to be enabled. (The end-to-end test of
a pip-installed plugin driving a turn is tests/cli/test_plugins_cli.py.)"""
from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.hooks import HookBus, UnknownHook
from hermes_core.plugin_api import Registry
from hermes_core.plugin_loader import PluginLoader

HELLO = '''
import json

def register(ctx):
    schema = {"name": "hello_world", "description": "Greets.",
              "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}
    def handle(params, **kwargs):
        return json.dumps({"greeting": "Hello, " + params.get("name", "World")})
    ctx.register_tool(name="hello_world", toolset="hello", schema=schema, handler=handle)
    ctx.register_hook("post_tool_call", lambda **kw: SEEN.append(kw["tool_name"]))

SEEN = []
'''


def _plugin(home: Path, name: str, code: str, manifest: str = "") -> Path:
    folder = home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(manifest or f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(code)
    return folder


@pytest.fixture
def isolated():
    """A loader of folder plugins with its own registry and hooks (the process's built-ins load
    through the shared one)."""
    reg, hooks = Registry(), HookBus()
    return PluginLoader(reg, hooks, entry_points=False), reg, hooks


def test_an_enabled_folder_plugin_registers_its_tool_and_hook(hermes_home, isolated):
    loader, reg, hooks = isolated
    _plugin(hermes_home, "hello-world", HELLO)
    infos = loader.load(hermes_home, enabled=["hello-world"])
    assert [(i.name, i.source, i.loaded, i.error) for i in infos] == [
        ("hello-world", "folder", True, None)]
    tool = reg.get("tool", "hello_world")
    assert tool is not None and tool.plugin == "hello-world" and tool.value["toolset"] == "hello"
    assert tool.value["handler"]({"name": "Ada"}, None) == '{"greeting": "Hello, Ada"}'
    hooks.fire("post_tool_call", tool_name="hello_world", args={}, result="", task_id=None)
    import sys

    assert sys.modules["hermes_user_plugins.hello_world"].SEEN == ["hello_world"]


def test_a_third_party_plugin_waits_to_be_enabled(hermes_home, isolated):
    loader, reg, _ = isolated
    _plugin(hermes_home, "hello-world", HELLO)
    (info,) = loader.load(hermes_home)
    assert not info.enabled and not info.loaded and info.error is None
    assert reg.get("tool", "hello_world") is None


def test_a_broken_plugin_is_named_and_skipped_and_the_others_load(hermes_home, isolated):
    loader, reg, hooks = isolated
    _plugin(hermes_home, "a-broken", "def register(ctx):\n"
                                     "    ctx.register_hook('pre_tool_call', print)\n"
                                     "    raise RuntimeError('no database configured')\n")
    _plugin(hermes_home, "b-no-register", "x = 1\n")
    _plugin(hermes_home, "c-bad-hook", "def register(ctx):\n    ctx.register_hook('on_boot', print)\n")
    _plugin(hermes_home, "hello-world", HELLO)
    infos = {i.name: i for i in loader.load(hermes_home, enabled=["a-broken", "b-no-register",
                                                                  "c-bad-hook", "hello-world"])}
    assert infos["a-broken"].error == "RuntimeError: no database configured"
    assert "no register(ctx)" in infos["b-no-register"].error
    assert "unknown hook 'on_boot'" in infos["c-bad-hook"].error
    assert infos["hello-world"].loaded and reg.get("tool", "hello_world") is not None
    assert not hooks.has("pre_tool_call")  # the broken plugin's hook went with it


def test_a_malformed_manifest_is_an_error_not_a_crash(hermes_home, isolated):
    loader, _, _ = isolated
    _plugin(hermes_home, "odd", HELLO, manifest="- just\n- a list\n")
    (info,) = loader.load(hermes_home, enabled=["odd"])
    assert not info.loaded and "not a YAML mapping" in info.error


def test_hooks_isolate_a_failing_callback_and_reject_unknown_names():
    bus = HookBus()
    bus.add("pre_llm_call", lambda **kw: 1 / 0, owner="bad")
    bus.add("pre_llm_call", lambda **kw: {"context": "remember the milk"}, owner="good")
    assert bus.fire("pre_llm_call", messages=[], model="m") == [{"context": "remember the milk"}]
    with pytest.raises(UnknownHook, match="valid hooks"):
        bus.add("pre_everything", print)
