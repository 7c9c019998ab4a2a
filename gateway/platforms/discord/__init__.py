"""The Discord platform plugin (discord.py): ``register(ctx)`` only registers; discord.py is
imported when an adapter connects. Settings: ``DISCORD_BOT_TOKEN``, ``DISCORD_ALLOWED_USERS``
(user ids), ``DISCORD_HOME_CHANNEL``, else ``gateway.discord.{bot_token, api_url, gateway_url,
allowed_users, toolsets}`` (the two URLs: another REST and Gateway address, e.g. a proxy).
The bot needs the Message Content intent (Developer Portal -> Bot)."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from gateway.platforms.direct import Question, direct_sender
from gateway.platforms.settings import as_mapping, pick

QUESTIONS = (
    Question("DISCORD_BOT_TOKEN", "Bot token (Developer Portal -> Bot -> Reset Token)",
             secret=True),
    Question("DISCORD_ALLOWED_USERS", "Allowed user ids, comma-separated (empty: pairing)",
             required=False),
)


def build(section: Any, env: Mapping[str, str]) -> Optional[Any]:
    section = as_mapping(section)  # the gateway passes its typed section
    token = pick(section, env, "DISCORD_BOT_TOKEN", "bot_token", "token")
    if not token:
        return None
    from gateway.platforms.discord.adapter import DiscordAdapter

    return DiscordAdapter(str(token),
                          api_url=str(pick(section, env, "DISCORD_API_URL", "api_url",
                                           default="")),
                          gateway_url=str(pick(section, env, "DISCORD_GATEWAY_URL",
                                               "gateway_url", default="")))


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_platform("discord", build, send=direct_sender("discord", build),
                          env=("DISCORD_BOT_TOKEN",), setup=QUESTIONS,
                          secrets=("DISCORD_BOT_TOKEN",))
