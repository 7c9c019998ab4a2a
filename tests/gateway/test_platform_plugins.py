"""A chat platform from a folder plugin reaches `hermes gateway run` through its settings
(``gateway.<name>`` in config.yaml, validated once the platform is known): junk there is one line,
a configured platform starts. A real `hermes` subprocess each time."""
from __future__ import annotations

import yaml

from tests.cli.conftest import hermes_env, run_hermes
from tests.gateway.conftest import GatewayProcess

PLUGIN = '''
from gateway.platforms.base import PlatformAdapter


class Echo(PlatformAdapter):
    name = "echo"

    async def start(self):
        return None

    async def stop(self):
        return None

    async def send(self, chat_id, text, *, reply_to=None, thread_id=None):
        return None


def make(settings, env):
    """None (not configured here) unless gateway.echo lists an allowed user."""
    return Echo() if settings.allowed_users else None


def register(ctx):
    ctx.register_platform("echo", make)
'''


def _echo_plugin(home) -> None:
    folder = home / "plugins" / "echo"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: echo\nversion: '0.1'\n")
    (folder / "__init__.py").write_text(PLUGIN)


def _config(home, echo: object) -> None:
    cfg = {"plugins": {"enabled": ["echo"]}, "gateway": {"echo": echo, "warmup": False}}
    (home / "config.yaml").write_text(yaml.safe_dump(cfg))


def test_junk_in_a_plugin_platforms_section_is_one_line(fake_provider, hermes_home):
    _echo_plugin(hermes_home)
    _config(hermes_home, {"allowed_users": {"not": "a list"}})
    res = run_hermes("gateway", "run", "--no-telegram", env=hermes_env(fake_provider))
    assert res.returncode == 1, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("hermes gateway:")]
    assert len(lines) == 1 and "`gateway.echo.allowed_users`" in lines[0], res.stderr
    assert "Traceback" not in res.stderr and "must be a list" in lines[0]


def test_a_plugin_platform_starts_with_its_own_settings_or_is_skipped(fake_provider, hermes_home):
    _echo_plugin(hermes_home)
    _config(hermes_home, {"enabled": True})  # no allowed user: the factory says "not here"
    res = run_hermes("gateway", "run", "--no-telegram", env=hermes_env(fake_provider))
    assert res.returncode == 2 and "nothing to run" in res.stderr, res.stderr
    _config(hermes_home, {"allowed_users": "7, 8"})  # a comma-separated list is a list
    gw = GatewayProcess(hermes_home, fake_provider.base_url, "--no-telegram", api=False)
    try:
        from gateway.status import read_status
        from tests.waiting import wait_until

        wait_until(lambda: (read_status() or {}).get("platforms") == ["echo"], 30, "echo running")
    finally:
        assert gw.terminate_and_wait() == 0, "".join(gw.stderr)
