"""How the gateway sends scheduled answers: through its running adapters, split to each
platform's message length (called from cron's worker threads, never the event loop)."""
from __future__ import annotations

import asyncio
from typing import Any, Optional

from cron.delivery import DeliveryError, Sender
from gateway.platforms.telegram import split_message


def adapter_sender(adapters: dict[str, Any], loop: asyncio.AbstractEventLoop,
                   fallback: Optional[Sender] = None, timeout: float = 120) -> Sender:
    """Send through the gateway's running adapters (called from a worker thread, never the loop)."""
    def send(platform: str, chat_id: str, thread_id: Optional[str], text: str) -> None:
        adapter = adapters.get(platform)
        if adapter is None:
            if fallback is None:
                raise DeliveryError(f"{platform} is not running in this gateway")
            fallback(platform, chat_id, thread_id, text)
            return
        for piece in split_message(text, adapter.max_message_length):
            sent = asyncio.run_coroutine_threadsafe(
                adapter.send(chat_id, piece, thread_id=thread_id), loop).result(timeout)
            if sent is None:
                raise DeliveryError(f"{platform} did not accept the message (see gateway.log)")
    return send
