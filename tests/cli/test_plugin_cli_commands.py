"""Plugin CLI commands (issue 25): `hermes NAME` dispatches what ``ctx.register_cli_command``
registered, a folder plugin in HERMES_HOME/plugins as much as the built-in `profile`, `auth` and
`model`; `hermes --help` lists them; a name `hermes` has itself stays its own; an unknown command
is still one clear line. Real `hermes` processes."""
from __future__ import annotations

import pytest

from tests.cli.conftest import hermes_env, run_hermes

PLUGIN = '''import os
import sys


def setup(parser):
    parser.add_argument("--name", default="world")
    parser.add_argument("--status", type=int, default=0)


def hello(args):
    home = os.environ["HERMES_HOME"]
    sys.stdout.write(f"hello {args.name} from {os.path.basename(home)}\\n")
    return args.status


def register(ctx):
    ctx.register_cli_command("hello", setup=setup, handler=hello, help="say hello (a plugin)")
    ctx.register_cli_command("sessions", setup=setup, handler=hello, help="must not win")
'''


@pytest.fixture
def env(hermes_home):
    folder = hermes_home / "plugins" / "hello"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: hello\nversion: '0.1'\n")
    (folder / "__init__.py").write_text(PLUGIN)
    (hermes_home / "config.yaml").write_text("plugins:\n  enabled: [hello]\n")
    return hermes_env()


def test_a_folder_plugin_adds_hermes_hello(env, hermes_home):
    res = run_hermes("hello", "--name", "Ada", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"hello Ada from {hermes_home.name}\n"
    assert run_hermes("hello", "--status", "3", env=env).returncode == 3
    helped = run_hermes("--help", env=env).stdout
    for line in ("hello", "say hello (a plugin)", "profile", "auth", "model", "sessions"):
        assert line in helped
    own = run_hermes("sessions", "list", env=env)
    assert own.returncode == 0 and "hello" not in own.stdout  # `hermes sessions` stays ours


def test_unknown_and_not_enabled_commands_are_one_line(env, hermes_home):
    for args in (("nosuch",), ("hello",)):
        if args == ("hello",):
            (hermes_home / "config.yaml").write_text("plugins:\n  enabled: []\n")
        res = run_hermes(*args, env=env)
        assert res.returncode == 2
        (line,) = res.stderr.strip().splitlines()
        assert f"invalid choice: '{args[0]}'" in line and "'model'" in line, line


def test_builtin_commands_run_through_their_registration(env):
    res = run_hermes("profile", "list", env=env)
    assert res.returncode == 0 and "default" in res.stdout, res.stderr
    auth = run_hermes("auth", "list", "nosuch", env=env)
    assert auth.returncode == 2 and "unknown provider 'nosuch'" in auth.stderr
