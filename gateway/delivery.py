"""How the gateway sends what is not a chat reply (scheduled answers, the ``send_message`` tool):
through its running adapters, each answer split to the platform's length with its files attached
(``PlatformAdapter.deliver``). Called from worker threads (cron's, the agent's), never the loop.

``install_live`` (the runner's ``start``) makes this process's running adapters the way
``live_sender()`` reaches a chat; outside a gateway it is each platform plugin's direct sender.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from cron.delivery import DeliveryError, Sender, registered_sender

if TYPE_CHECKING:  # asyncio itself only inside a gateway: every agent checks running_platforms
    import asyncio

_LIVE: dict[str, Any] = {}


def adapter_sender(adapters: dict[str, Any], loop: asyncio.AbstractEventLoop,
                   fallback: Optional[Sender] = None, timeout: float = 120) -> Sender:
    """Send through the gateway's running adapters (called from a worker thread, never the loop)."""
    import asyncio

    def send(platform: str, chat_id: str, thread_id: Optional[str], text: str,
             files: Sequence[Path] = ()) -> None:
        adapter = adapters.get(platform)
        if adapter is None:
            if fallback is None:
                raise DeliveryError(f"{platform} is not running in this gateway")
            if files:
                fallback(platform, chat_id, thread_id, text, files=files)
            else:
                fallback(platform, chat_id, thread_id, text)
            return
        ok = asyncio.run_coroutine_threadsafe(
            adapter.deliver(chat_id, text, list(files), thread_id=thread_id), loop).result(timeout)
        if not ok:
            raise DeliveryError(f"{platform} did not accept the message (see gateway.log)")
    return send


def install_live(adapters: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
    """This process's gateway: its adapters deliver ``send_message`` and cron answers."""
    _LIVE.update(adapters=adapters, loop=loop)


def running_platforms() -> list[str]:
    """The platforms this process's gateway is serving (none outside a gateway)."""
    return sorted(_LIVE.get("adapters") or ())


def uninstall_live(adapters: dict[str, Any]) -> None:
    if _LIVE.get("adapters") is adapters:
        _LIVE.clear()


def live_sender(cfg: Any = None) -> Sender:
    """The running gateway's adapters when this process is one, else the plugins' own senders."""
    direct = registered_sender(cfg)
    if _LIVE:
        return adapter_sender(_LIVE["adapters"], _LIVE["loop"], direct)
    return direct
