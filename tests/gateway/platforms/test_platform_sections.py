"""Each new platform's factory takes the gateway's typed ``gateway.<name>`` section (its own
keys as extras of PlatformConfig), as the gateway hands it, not only a plain mapping."""
from __future__ import annotations

from gateway.platforms import discord, email, matrix, slack
from hermes_core.gateway_config import GatewayConfig

GW = GatewayConfig.model_validate({
    "email": {"address": "bot@example.org", "password": "pw", "imap_host": "imap.example.org",
              "imap_port": 1143, "imap_security": "none", "allowed_users": ["me@example.org"]},
    "matrix": {"homeserver": "http://127.0.0.1:1", "user_id": "@bot:x", "access_token": "t"},
    "slack": {"bot_token": "xoxb-1", "app_token": "xapp-1", "base_url": "http://127.0.0.1:1/api/"},
    "discord": {"bot_token": "d-1", "api_url": "http://127.0.0.1:1/api/v10"},
})


def test_typed_sections_build_adapters():
    mail = email.build(GW.platform("email"), {})
    assert (mail.address, mail.imap, mail.smtp[0]) == (
        "bot@example.org", ("imap.example.org", 1143, "none"), "imap.example.org")
    assert matrix.build(GW.platform("matrix"), {}) is not None
    assert slack.build(GW.platform("slack"), {}).base_url == "http://127.0.0.1:1/api/"
    assert discord.build(GW.platform("discord"), {}).api_url == "http://127.0.0.1:1/api/v10"
    assert slack.build(GW.platform("slack"), {"SLACK_BOT_TOKEN": "xoxb-env"})._bot_token \
        == "xoxb-env"  # the environment beats config.yaml
    assert email.build(GatewayConfig().platform("email"), {}) is None  # not configured
