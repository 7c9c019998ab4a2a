"""The Slack platform plugin (slack-bolt, Socket Mode or HTTP Events mode): ``register(ctx)``
only registers; bolt is imported when an adapter connects. Settings: ``SLACK_BOT_TOKEN``
(``xoxb-``), ``SLACK_APP_TOKEN`` (``xapp-``, Socket Mode), ``SLACK_SIGNING_SECRET`` (HTTP mode),
``SLACK_ALLOWED_USERS`` (member ids), ``SLACK_HOME_CHANNEL``, else ``gateway.slack.{bot_token,
app_token, signing_secret, mode, host, port, path, base_url, allowed_users, toolsets}``
(``base_url``: another Web API address, e.g. an Enterprise Grid proxy). ``mode``: ``socket`` or
``http``; unset, it is ``http`` when there is a signing secret and no app token."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from gateway.platforms.direct import Question, direct_sender
from gateway.platforms.settings import as_mapping, pick
from gateway.platforms.slack.http_events import DEFAULT_PATH, DEFAULT_PORT, HttpSettings

QUESTIONS = (
    Question("SLACK_BOT_TOKEN", "Bot token (xoxb-…, OAuth & Permissions)", secret=True),
    Question("SLACK_APP_TOKEN", "App-level token with connections:write (xapp-…, Socket Mode)",
             secret=True),
    Question("SLACK_ALLOWED_USERS", "Allowed member ids (U…), comma-separated (empty: pairing)",
             required=False),
)
DEFAULT_BASE_URL = "https://slack.com/api/"


def build(section: Any, env: Mapping[str, str]) -> Optional[Any]:
    """The adapter for these settings; None without a bot token. Without an app token it can
    only send (cron, send_message)."""
    section = as_mapping(section)  # the gateway passes its typed section
    bot = pick(section, env, "SLACK_BOT_TOKEN", "bot_token", "token")
    if not bot:
        return None
    from gateway.platforms.slack.adapter import SlackAdapter

    app_token = str(pick(section, env, "SLACK_APP_TOKEN", "app_token", default=""))
    return SlackAdapter(str(bot), app_token,
                        base_url=str(pick(section, env, "SLACK_BASE_URL", "base_url",
                                          default=DEFAULT_BASE_URL)),
                        http=http_settings(section, env, app_token))


def http_settings(section: Mapping[str, Any], env: Mapping[str, str],
                  app_token: str) -> Optional[HttpSettings]:
    """The HTTP Events receiver's settings, or None for Socket Mode (pure)."""
    from hermes_core.config import ConfigError

    secret = str(pick(section, env, "SLACK_SIGNING_SECRET", "signing_secret", default=""))
    mode = str(section.get("mode") or ("http" if secret and not app_token else "socket"))
    if mode not in ("socket", "http"):
        raise ConfigError(f"gateway.slack.mode must be socket or http, not {mode!r}")
    if mode == "socket":
        return None
    if not secret:
        raise ConfigError("gateway.slack.mode is http but there is no signing secret: set "
                          "SLACK_SIGNING_SECRET (Basic Information -> App Credentials)")
    try:
        port = int(section.get("port", DEFAULT_PORT))
    except (TypeError, ValueError):
        raise ConfigError(f"gateway.slack.port must be a port number, not "
                          f"{section.get('port')!r}") from None
    return HttpSettings(secret, str(section.get("host") or "127.0.0.1"), port,
                        str(section.get("path") or DEFAULT_PATH))


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_platform("slack", build, send=direct_sender("slack", build),
                          env=("SLACK_BOT_TOKEN",), setup=QUESTIONS,
                          secrets=("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN",
                                   "SLACK_SIGNING_SECRET"))
