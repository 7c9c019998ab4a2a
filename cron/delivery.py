"""Where a run's answer goes (SPEC §12): ``local`` (the output file only), ``origin`` (the chat the
job was created from), ``<platform>`` (its home channel, ``<PLATFORM>_HOME_CHANNEL``, e.g.
``TELEGRAM_HOME_CHANNEL``) or ``<platform>:<chat>[:<thread>]`` (``cron.targets``: telegram,
discord, slack, matrix, email); several comma-separated.

Parsing is pure. Sending takes a ``Sender``: inside the gateway it is the running adapters
(``gateway.delivery.adapter_sender``), anywhere else each platform plugin's own direct sender
(``registered_sender``; Telegram's calls the Bot API, honouring ``TELEGRAM_BASE_URL``).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Callable, Optional

from cron.targets import BUILTIN, TargetSyntax, split_chat

log = logging.getLogger("hermes.cron")

TARGET_HELP = ("local, origin, <platform> (its home channel) or <platform>:<chat> (telegram, "
               "discord, slack, matrix, email), comma-separated")
SILENT = "[SILENT]"

# (platform, chat_id, thread_id, text[, files=paths]): senders take ``files`` as a keyword too
Sender = Callable[..., None]


def known_platforms() -> tuple[str, ...]:
    """The built-in platforms and any a loaded plugin registered."""
    from hermes_core.plugin_api import REGISTRY

    return tuple(dict.fromkeys([*BUILTIN, *(r.name for r in REGISTRY.of("platform"))]))


class DeliveryError(ValueError):
    """A target cannot be used or a message could not be sent; the text says why."""


@dataclass(frozen=True)
class Target:
    kind: str  # "local" | "origin" | "home" | "chat"
    platform: Optional[str] = None
    chat_id: Optional[str] = None
    thread_id: Optional[str] = None

    @property
    def text(self) -> str:
        if self.kind in ("local", "origin"):
            return self.kind
        if self.kind == "home":
            return str(self.platform)
        return ":".join(p for p in (self.platform, self.chat_id, self.thread_id) if p)


def parse_targets(text: Optional[str], origin: Optional[dict[str, Any]]) -> list[Target]:
    """``"origin, telegram:123"`` -> targets; DeliveryError names the bad part and the choices."""
    parts = [p.strip() for p in (text or "").split(",") if p.strip()]
    if not parts:
        raise DeliveryError(f"no delivery target given; use {TARGET_HELP}")
    out: list[Target] = []
    for part in parts:
        low = part.lower()
        if low == "local":
            target = Target("local")
        elif low == "origin":
            if not origin or origin.get("platform") not in known_platforms() \
                    or not origin.get("chat_id"):
                raise DeliveryError("deliver 'origin' needs a chat to send to, and this job was "
                                    "not created from one; use local or <platform>:<chat>")
            target = Target("origin")
        else:
            target = _chat_target(part)
        if target not in out:
            out.append(target)
    return out


def _chat_target(part: str) -> Target:
    platform, _, rest = part.partition(":")
    platform = platform.lower()
    if platform not in known_platforms():
        raise DeliveryError(f"unknown delivery target {part!r}; use {TARGET_HELP}")
    if not rest:
        return Target("home", platform)
    try:
        chat, thread = split_chat(platform, rest)
    except TargetSyntax as exc:
        raise DeliveryError(str(exc)) from None
    return Target("chat", platform, chat, thread)


def targets_text(targets: list[Target]) -> str:
    return ",".join(t.text for t in targets)


def home_channel(platform: str, cfg: Any = None) -> Optional[str]:
    """``TELEGRAM_HOME_CHANNEL`` (or ``gateway.telegram.home_channel`` in config.yaml)."""
    value = os.environ.get(f"{platform.upper()}_HOME_CHANNEL")
    if not value and cfg is not None:
        value = cfg.gateway.platform(platform).home_channel
    text = str(value or "").strip()
    return text or None


def check_home_channels(targets: list[Target], cfg: Any = None) -> None:
    for t in targets:
        if t.kind == "home" and not home_channel(str(t.platform), cfg):
            raise DeliveryError(f"deliver {t.platform!r} sends to its home channel, and none is "
                                f"set: set {str(t.platform).upper()}_HOME_CHANNEL in "
                                f"~/.hermes/.env, or use {t.platform}:<chat_id>")


def destinations(targets: list[Target], origin: Optional[dict[str, Any]],
                 cfg: Any = None) -> list[tuple[str, str, Optional[str]]]:
    """Chat targets -> (platform, chat_id, thread_id), duplicates dropped; ``local`` adds none."""
    out: list[tuple[str, str, Optional[str]]] = []
    for t in targets:
        if t.kind == "origin" and origin:
            dest = (str(origin.get("platform")), str(origin.get("chat_id")),
                    str(origin["thread_id"]) if origin.get("thread_id") else None)
        elif t.kind == "home":
            chat = home_channel(str(t.platform), cfg)
            if not chat:
                raise DeliveryError(f"{str(t.platform).upper()}_HOME_CHANNEL is not set")
            dest = (str(t.platform), chat, None)
        elif t.kind == "chat":
            dest = (str(t.platform), str(t.chat_id), t.thread_id)
        else:
            continue
        if dest not in out:
            out.append(dest)
    return out


def is_silent(answer: Optional[str]) -> bool:
    return (answer or "").strip() == SILENT


def answer_message(name: str, answer: str) -> str:
    return f"⏰ {name}\n\n{answer.strip()}"


def failure_message(name: str, error: str) -> str:
    line = " ".join(error.split())
    return f"⚠ Scheduled job {name!r} failed: {line[:300]}"


def deliver(targets: list[Target], origin: Optional[dict[str, Any]], text: str, sender: Sender,
            cfg: Any = None) -> str:
    """Send ``text`` to every chat target; returns a one-line summary per target for the run row.
    A failing target never stops the others."""
    try:
        dests = destinations(targets, origin, cfg)
    except DeliveryError as exc:
        return f"failed: {exc}"
    results = []
    for platform, chat_id, thread_id in dests:
        where = ":".join(p for p in (platform, chat_id, thread_id) if p)
        try:
            sender(platform, chat_id, thread_id, text)
            results.append(f"{where} ok")
        except Exception as exc:  # noqa: BLE001 - recorded on the run, the others still go out
            log.warning("cron delivery to %s failed: %s", where, exc)
            results.append(f"{where} failed: {exc}")
    return "; ".join(results)


# -- senders ---------------------------------------------------------------------------------

def registered_sender(cfg: Any = None) -> Sender:
    """Send through each platform's own plugin (``ctx.register_platform(name, ..., send=fn)``,
    ``fn(cfg, chat_id, thread_id, text, files=())``): how ``hermes cron tick``, the REPL and the
    CLI reach a chat without a running gateway."""
    def send(platform: str, chat_id: str, thread_id: Optional[str], text: str,
             files: Any = ()) -> None:
        from hermes_core.config import load_plugins
        from hermes_core.plugin_api import REGISTRY

        if cfg is not None:
            load_plugins(cfg)
        reg = REGISTRY.get("platform", platform)
        direct = reg.options.get("send") if reg is not None else None
        if direct is None:
            raise DeliveryError(f"no way to send to {platform}: no loaded platform plugin sends "
                                "there (`hermes plugins list`)")
        if files:
            direct(cfg, chat_id, thread_id, text, files=list(files))
        else:
            direct(cfg, chat_id, thread_id, text)
    return send
