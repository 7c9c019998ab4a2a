"""The webhook route: check the signature, turn the event into a turn (acting for
``webhook:<name>``), answer the sender at once (202), and deliver the agent's answer to the
hook's targets when the turn ends. A sender's retry of the same delivery (``X-GitHub-Delivery``
or ``Idempotency-Key``) is answered without a second turn."""
from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import OrderedDict
from typing import Any

from aiohttp import web

from gateway.platforms.api_server.wire import APIError
from gateway.platforms.webhook.prompt import decode, render
from gateway.platforms.webhook.settings import Hook, read_hooks
from gateway.platforms.webhook.signing import check

log = logging.getLogger("gateway.webhook")

KEEP_DELIVERIES = 1000  # delivery ids remembered against retries
ID_HEADERS = ("X-GitHub-Delivery", "Idempotency-Key", "X-Request-Id")


def event_of(headers: Any, payload: Any) -> str:
    """GitHub names the event in a header; Stripe-like senders in the payload's ``type``."""
    named = headers.get("X-GitHub-Event") or headers.get("X-Event-Type")
    if named:
        return str(named)
    return str(payload.get("type") or payload.get("event") or "") if isinstance(payload, dict) \
        else ""


def _event_id(hook: Hook, payload: Any) -> str:
    """Stripe names a delivery by its event's ``id`` (the same on every retry)."""
    if hook.signature == "stripe" and isinstance(payload, dict):
        return str(payload.get("id") or "")
    return ""


class Receiver:
    def __init__(self, runner: Any, hooks: dict[str, Hook], cfg: Any) -> None:
        self.runner, self.hooks, self.cfg = runner, hooks, cfg
        self._seen: "OrderedDict[str, None]" = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        hook = self.hooks.get(name)
        if hook is None:
            raise APIError(404, f"No webhook named {name!r}; configure gateway.webhooks.{name} "
                                "in config.yaml.", code="unknown_webhook")
        body = await request.read()
        problem = check(hook.signature, hook.secret, body, request.headers, time.time())
        if problem is not None:
            log.warning("webhook %s: refused a request: %s", name, problem.split(":")[0])
            raise APIError(401, problem, code="invalid_signature")
        payload = decode(body)
        event = event_of(request.headers, payload)
        if event == "ping":  # GitHub's hello when a hook is created
            return web.json_response({"ok": True})
        if hook.events is not None and event not in hook.events:
            return web.json_response({"ignored": event or "unknown"})
        delivery = next((request.headers[h] for h in ID_HEADERS if request.headers.get(h)),
                        None) or _event_id(hook, payload) or uuid.uuid4().hex
        if delivery in self._seen:
            return web.json_response({"duplicate": True, "id": delivery})
        self._remember(delivery)
        origin = {"platform": "webhook", "chat_id": name, "user_id": name, "thread_id": None}
        turn = self.runner.submit(f"webhook:{name}:{delivery}", render(hook.prompt, name, event,
                                                                       payload), origin=origin)
        task = asyncio.ensure_future(self._answer(hook, delivery, turn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        log.info("webhook %s: event %s (%s) accepted", name, event or "unknown", delivery)
        return web.json_response({"accepted": True, "id": delivery}, status=202)

    def _remember(self, delivery: str) -> None:
        self._seen[delivery] = None
        while len(self._seen) > KEEP_DELIVERIES:
            self._seen.popitem(last=False)

    async def _answer(self, hook: Hook, delivery: str, turn: Any) -> None:
        from cron.delivery import deliver, is_silent
        from gateway.delivery import live_sender

        outcome = await turn.outcome()
        text = outcome.text if outcome.kind == "ok" else \
            f"⚠ Webhook {hook.name!r}: the turn for event {delivery} failed: {outcome.text}"
        if is_silent(text) or not text.strip():
            return
        summary = await asyncio.to_thread(deliver, list(hook.targets), None, text,
                                          live_sender(self.cfg), self.cfg)
        log.info("webhook %s: answer to %s delivered: %s", hook.name, delivery, summary)


def register(server: Any) -> None:
    """Mount ``POST /webhooks/{name}`` for the hooks in config.yaml; a hook that cannot be
    served is named in the log (and answers 404) while the others work."""
    from hermes_core.config import load_config

    cfg = load_config()
    from gateway.platforms.settings import as_mapping

    hooks, errors = read_hooks(as_mapping(cfg.gateway), os.environ)  # webhooks: an extra key
    for line in errors:
        log.error("webhook not served: %s", line)
    receiver = Receiver(server.runner, hooks, cfg)
    server.add_signed_endpoint("webhooks", "POST", "/webhooks/{name}", receiver.handle)
    log.info("webhooks: serving %s", ", ".join(sorted(hooks)) or "none")
