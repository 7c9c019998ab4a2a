"""Plugins end to end (issue 22): a package built and pip-installed inside the test adds a tool and
a hook without touching the project; a broken folder plugin is named by `hermes doctor` and
`hermes plugins list` and skipped, while the rest still work. Real pip, real `hermes` processes,
the loopback provider scripting the tool call."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text, tool_calls

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "hermes-plugin-shout"
version = "0.3.0"

[project.entry-points."hermes_agent.plugins"]
shout = "hermes_shout"
"""
PLUGIN = '''import json
import os


def register(ctx):
    schema = {"name": "shout", "description": "Upper-case some text.",
              "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                             "required": ["text"]}}

    def shout(params, **kwargs):
        return json.dumps({"shouted": params["text"].upper()})

    def log(**kwargs):
        with open(os.environ["SHOUT_LOG"], "a") as f:
            f.write(kwargs["tool_name"] + " " + str(kwargs.get("result")) + "\\n")

    ctx.register_tool(name="shout", toolset="shout", schema=schema, handler=shout)
    ctx.register_hook("post_tool_call", log)
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The plugin package, built and installed by pip into a folder of its own."""
    root = tmp_path_factory.mktemp("shout")
    pkg = root / "src"
    (pkg / "hermes_shout").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(PYPROJECT)
    (pkg / "hermes_shout" / "__init__.py").write_text(PLUGIN)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(pkg)],
                   check=True, capture_output=True, text=True)
    assert list(target.glob("hermes_plugin_shout-0.3.0.dist-info"))
    return target


def _env(fake_provider, site: Path, tmp_path: Path) -> dict[str, str]:
    env = hermes_env(fake_provider, SHOUT_LOG=str(tmp_path / "shout.log"))
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    return env


def _plugins(env) -> dict[str, dict]:
    res = run_hermes("plugins", "list", "--json", env=env)
    assert res.returncode == 0, res.stderr
    return {row["name"]: row for row in json.loads(res.stdout)}


def test_a_pip_installed_plugin_adds_a_tool_and_a_hook(fake_provider, site, tmp_path):
    env = _env(fake_provider, site, tmp_path)
    found = _plugins(env)
    assert found["shout"]["source"] == "pip" and found["shout"]["version"] == "0.3.0"
    assert not found["shout"]["enabled"]  # a third-party plugin waits to be enabled
    assert found["terminal"]["source"] == "builtin" and found["terminal"]["loaded"]
    res = run_hermes("plugins", "enable", "shout", env=env)
    assert res.returncode == 0 and "Enabled plugin shout" in res.stdout, res.stderr

    fake_provider.queue(tool_calls([("shout", {"text": "hello there"})]), text("It shouted."))
    res = run_hermes("-z", "shout hello there", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "It shouted."
    offered = {t["function"]["name"] for t in fake_provider.requests[0]["tools"]}
    assert "shout" in offered and "terminal" in offered
    result = [m for m in fake_provider.requests[1]["messages"] if m["role"] == "tool"][0]
    assert json.loads(result["content"]) == {"shouted": "HELLO THERE"}
    assert (tmp_path / "shout.log").read_text().startswith("shout {")
    assert _plugins(env)["shout"]["loaded"]

    run_hermes("plugins", "disable", "shout", env=env)
    fake_provider.queue(text("plain"))
    run_hermes("-z", "hi", env=env)
    offered = {t["function"]["name"] for t in fake_provider.requests[-1]["tools"]}
    assert "shout" not in offered


def test_a_broken_folder_plugin_is_named_and_skipped(fake_provider, hermes_home, tmp_path):
    folder = hermes_home / "plugins" / "flaky"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: flaky\nversion: '0.1'\n")
    (folder / "__init__.py").write_text("import no_such_module_here\n\ndef register(ctx):\n    pass\n")
    env = hermes_env(fake_provider)
    assert run_hermes("plugins", "enable", "flaky", env=env).returncode == 0
    listed = _plugins(env)["flaky"]
    assert not listed["loaded"] and "ModuleNotFoundError" in listed["error"]
    doc = run_hermes("doctor", env=env)
    line = next(ln for ln in doc.stdout.splitlines() if "plugins:" in ln)
    assert line.startswith("✗") and "flaky" in line and "no_such_module_here" in line
    fake_provider.queue(text("still fine"))
    res = run_hermes("-z", "hi", env=env)  # the agent still works, with every built-in tool
    assert res.returncode == 0 and res.stdout.strip() == "still fine", res.stderr
    assert "read_file" in {t["function"]["name"] for t in fake_provider.requests[-1]["tools"]}


def test_enabling_an_unknown_plugin_is_a_clear_error(fake_provider):
    res = run_hermes("plugins", "enable", "nope", env=hermes_env(fake_provider))
    assert res.returncode == 1
    assert "no plugin named 'nope'" in res.stderr and "hermes plugins list" in res.stderr
