"""What ``hermes gateway setup webhook`` asks and writes (pure but for the secret it may
generate): the hook goes to config.yaml ``gateway.webhooks.<name>``, its shared secret to .env as
``<NAME>_WEBHOOK_SECRET`` (config.yaml only names the variable), checked by the same
``read_hook`` the gateway uses, so what setup accepts the gateway serves."""
from __future__ import annotations

import re
import secrets
from typing import Any, Mapping

from gateway.platforms.direct import Question
from gateway.platforms.webhook.settings import WebhookConfigError, read_hook

QUESTIONS = (
    Question("WEBHOOK_NAME", "Webhook name (it is served at POST /webhooks/<name>)",
             default="github"),
    Question("WEBHOOK_SIGNATURE", "How the sender signs: github or stripe", default="github"),
    Question("WEBHOOK_DELIVER", "Where answers go (e.g. telegram:123456789; comma-separated)"),
    Question("WEBHOOK_SECRET", "Shared secret (Enter: generate one)", secret=True,
             required=False),
)


def secret_var(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper() + "_WEBHOOK_SECRET"


def plan(answers: Mapping[str, str], env: Mapping[str, str]
         ) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(hook name, its config.yaml section, .env lines); WebhookConfigError when the gateway
    could not serve it. No secret given: the one already in .env, else a new random one."""
    name = (answers.get("WEBHOOK_NAME") or "github").strip()
    var = secret_var(name) if name else "WEBHOOK_SECRET"
    secret = answers.get("WEBHOOK_SECRET") or env.get(var) or secrets.token_hex(32)
    section = {"secret_env": var, "deliver": (answers.get("WEBHOOK_DELIVER") or "").strip(),
               "signature": (answers.get("WEBHOOK_SIGNATURE") or "github").strip().lower()}
    read_hook(name, section, {var: secret})
    return name, section, {var: secret}


__all__ = ["QUESTIONS", "WebhookConfigError", "plan", "secret_var"]
