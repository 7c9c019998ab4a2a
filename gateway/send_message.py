"""The ``send_message`` tool (toolset ``messaging``, issue 24): the agent sends text and files to
a chat on any platform, through the running gateway's adapters when it runs inside one, else
each platform plugin's own sender (``gateway.delivery.live_sender``).

Rights (the hardening issue's ownership rules): the local owner (the CLI, the API key holder,
``ctx.owner`` None) sends anywhere; a chat user (or a webhook, a job of theirs) only to the chat
the turn came from, so the tool cannot reach other people. Files come from the agent's own
working area: a confined agent cannot send what its file tools could not read, and secrets
(keys, ``.env``) need the terminal user's approval, as for ``read_file``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from tools.registry import ToolContext, ToolError, ToolSpec

Dest = tuple[str, str, Optional[str]]


def unavailable() -> Optional[str]:
    """Offered only where there is somewhere to send: inside a gateway, or when a platform is
    configured (its env var, e.g. TELEGRAM_BOT_TOKEN, or a ``gateway.<platform>`` section), so
    a default agent without platforms pays nothing for the schema."""
    import os

    from gateway.delivery import running_platforms
    from hermes_core.config import shared_config
    from hermes_core.plugin_api import REGISTRY

    if running_platforms():
        return None
    platforms = REGISTRY.of("platform")
    if any(os.environ.get(var) for reg in platforms for var in reg.options.get("env") or ()):
        return None
    try:  # shared: a gateway makes an agent per session, and this runs for each
        gw = shared_config().gateway
    except Exception:  # noqa: BLE001 - a broken config.yaml is reported elsewhere
        gw = None
    if gw is not None and any(gw.written(reg.name) for reg in platforms):
        return None
    return "no chat platform is configured (hermes gateway setup)"


def allowed(dest: Dest, owner: Optional[str], origin: Optional[dict[str, Any]]) -> bool:
    """May this agent send to ``dest`` (pure)? Chat users: only their own chat, any thread."""
    if owner is None:
        return True
    return bool(origin) and (str(origin.get("platform")), str(origin.get("chat_id"))) == dest[:2]


def _files(raw: Any, ctx: ToolContext) -> list[Path]:
    from tools.file_access import guard

    if raw in (None, ""):
        return []
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ToolError("send_message: files is a list of paths")
    out: list[Path] = []
    for name in names:
        full = (Path(ctx.cwd) / Path(name).expanduser()).resolve()
        root = ctx.confine_to.resolve() if ctx.confine_to is not None else None
        if root is not None and full != root and root not in full.parents:
            raise ToolError(f"send_message: {name} is outside the working directory {root}")
        if not full.is_file():
            raise ToolError(f"send_message: {name} is not a file")
        guard("send_message", full, ctx, write=False)
        out.append(full)
    return out


def send_message(args: dict, ctx: ToolContext) -> str:
    from cron.delivery import DeliveryError, destinations, parse_targets
    from gateway.delivery import live_sender

    text, files = str(args.get("text") or ""), _files(args.get("files"), ctx)
    if not text.strip() and not files:
        raise ToolError("send_message: give text, files or both")
    try:
        dests = destinations(parse_targets(str(args.get("target") or ""), ctx.origin), ctx.origin,
                             ctx.config)
    except DeliveryError as exc:
        raise ToolError(f"send_message: {exc}") from None
    refused = [":".join(d[:2]) for d in dests if not allowed(d, ctx.owner, ctx.origin)]
    if refused:
        raise ToolError(f"send_message: you may send only to this chat (target origin), not to "
                        f"{', '.join(refused)}")
    sender, sent = live_sender(ctx.config), []
    for platform, chat_id, thread_id in dests:
        try:
            sender(platform, chat_id, thread_id, text, files=files)
        except DeliveryError as exc:
            raise ToolError(f"send_message: {exc}; sent so far: {sent or 'nothing'}") from None
        sent.append(":".join(p for p in (platform, chat_id, thread_id) if p))
    return json.dumps({"sent": sent, "files": [f.name for f in files]})


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_toolset("messaging", "send_message: text and files to a chat")
    ctx.register_tool(ToolSpec(
        "send_message",
        "Send text and files to a chat now (not as your reply).",
        {"type": "object", "properties": {
            "target": {"type": "string", "description": "origin (this chat), <platform> (its home "
                                                        "channel) or <platform>:<chat id>."},
            "text": {"type": "string"},
            "files": {"type": "array", "items": {"type": "string"}, "description": "Paths."},
        }, "required": ["target"]},
        send_message, "messaging", check=unavailable, mutating=True,
    ))
