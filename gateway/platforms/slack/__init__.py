"""The Slack platform plugin (slack-bolt over Socket Mode): ``register(ctx)`` only registers;
bolt is imported when an adapter connects. Settings: ``SLACK_BOT_TOKEN`` (``xoxb-``),
``SLACK_APP_TOKEN`` (``xapp-``, Socket Mode), ``SLACK_ALLOWED_USERS`` (member ids),
``SLACK_HOME_CHANNEL``, else ``gateway.slack.{bot_token, app_token, base_url, allowed_users,
toolsets}`` (``base_url``: another Web API address, e.g. an Enterprise Grid proxy)."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from gateway.platforms.direct import Question, direct_sender
from gateway.platforms.settings import as_mapping, pick

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

    return SlackAdapter(str(bot), str(pick(section, env, "SLACK_APP_TOKEN", "app_token",
                                           default="")),
                        base_url=str(pick(section, env, "SLACK_BASE_URL", "base_url",
                                          default=DEFAULT_BASE_URL)))


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_platform("slack", build, send=direct_sender("slack", build),
                          env=("SLACK_BOT_TOKEN",), setup=QUESTIONS,
                          secrets=("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"))
