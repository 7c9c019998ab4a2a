"""``gateway.webhooks`` read into hooks (pure but for the environment it is given): each needs a
secret and a delivery target; a bad one is named with what to write instead."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from cron.delivery import DeliveryError, Target, parse_targets
from gateway.platforms.webhook.signing import SCHEMES

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
DEFAULT_PROMPT = ("A webhook event arrived on '{name}' (event: {event}). Its payload:\n\n"
                  "{payload}\n\nSay briefly what happened and what, if anything, needs doing.")


class WebhookConfigError(ValueError):
    """One webhook cannot be served as configured; the text says how to fix it."""


@dataclass(frozen=True)
class Hook:
    name: str
    secret: str = field(repr=False)
    targets: tuple[Target, ...]
    prompt: str = DEFAULT_PROMPT
    events: Optional[frozenset[str]] = None  # None: every event
    signature: str = "github"  # how requests are signed (webhook.signing.SCHEMES)


def read_hook(name: str, raw: Any, env: Mapping[str, str]) -> Hook:
    where = f"config.yaml `gateway.webhooks.{name}`"
    if not _NAME.match(name):
        raise WebhookConfigError(f"{where}: a webhook name is letters, digits, '-', '_' or '.'")
    if not isinstance(raw, dict):
        raise WebhookConfigError(f"{where} must be a mapping with secret_env and deliver")
    secret = str(raw.get("secret") or "")
    if raw.get("secret_env"):
        secret = env.get(str(raw["secret_env"]), "")
        if not secret:
            raise WebhookConfigError(f"{where}: the environment variable {raw['secret_env']} "
                                     "(secret_env) is not set; put it in ~/.hermes/.env")
    if not secret:
        raise WebhookConfigError(f"{where}: no secret; set secret_env: <ENV VAR> (or secret:)")
    try:
        targets = parse_targets(str(raw.get("deliver") or ""), None)
    except DeliveryError as exc:
        raise WebhookConfigError(f"{where}: deliver: {exc}") from None
    events = raw.get("events")
    if events is not None and not isinstance(events, (list, str)):
        raise WebhookConfigError(f"{where}: events is a list of event names")
    if isinstance(events, str):
        events = events.split(",")
    scheme = str(raw.get("signature") or "github").strip().lower()
    if scheme not in SCHEMES:
        raise WebhookConfigError(f"{where}: signature is one of {', '.join(SCHEMES)}, "
                                 f"not {raw.get('signature')!r}")
    return Hook(name, secret, tuple(targets), str(raw.get("prompt") or DEFAULT_PROMPT),
                frozenset(e.strip() for e in events if e.strip()) if events else None, scheme)


def read_hooks(gw: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Hook], list[str]]:
    """(the hooks that can be served, one error line for each that cannot)."""
    raw = gw.get("webhooks")
    if not isinstance(raw, dict):
        return {}, ([] if raw in (None, False) else
                    ["config.yaml `gateway.webhooks` must map names to settings"])
    hooks: dict[str, Hook] = {}
    errors: list[str] = []
    for name, section in raw.items():
        if str(name) == "enabled":
            continue
        try:
            hooks[str(name)] = read_hook(str(name), section, env)
        except WebhookConfigError as exc:
            errors.append(str(exc))
    return hooks, errors
