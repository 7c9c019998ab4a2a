"""Webhooks (issue 24): ``POST /webhooks/<name>`` on the gateway's API server, signed with
HMAC-SHA256 the way GitHub signs (``X-Hub-Signature-256: sha256=<hex>``), turns an event into a
turn whose answer goes to the hook's delivery target. Configured in config.yaml::

    gateway:
      webhooks:
        github:                              # POST /webhooks/github
          secret_env: GITHUB_WEBHOOK_SECRET  # the env var holding the shared secret (or secret:)
          deliver: telegram:123456789        # cron's targets: <platform>[:<chat>], comma-separated
          events: [pull_request, issues]     # optional: other X-GitHub-Event values are ignored
          prompt: "PR {pull_request.title} was {action}"   # optional; {payload} is all of it
        stripe:
          secret_env: STRIPE_WEBHOOK_SECRET
          signature: stripe    # Stripe-Signature: t=<ts>,v1=<hex>, within 300 s (default: github)
          deliver: telegram:123456789

Nothing is mounted unless ``gateway.webhooks`` is set. The signature replaces the API key on
this route only; a turn acts for ``webhook:<name>`` (never the owner), so a payload cannot
reach the owner's memory or sessions.
"""
from __future__ import annotations

from typing import Any


def mount(server: Any) -> None:
    from gateway.platforms.webhook.routes import register

    register(server)


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_api_routes("webhook", mount, setting="webhooks")
