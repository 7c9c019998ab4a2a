"""What every platform plugin offers besides its adapter, built once here:

- ``direct_sender(platform, factory)``: the ``send=`` of ``ctx.register_platform``, how cron and
  ``send_message`` reach a chat without a running gateway (connect, deliver, disconnect);
- ``Question`` and ``probe``: what ``hermes gateway setup`` asks for a platform and how it checks
  the answers (the adapter's ``connect()``: a login, an ``auth.test``, an IMAP login).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from gateway.platforms.settings import gateway_section

Factory = Callable[[Mapping[str, Any], Mapping[str, str]], Any]


@dataclass(frozen=True)
class Question:
    """One setting ``hermes gateway setup`` asks for: saved to ``.env`` as ``env`` (secrets and
    ids alike, Hermes' variable names)."""

    env: str
    prompt: str
    secret: bool = False
    required: bool = True
    default: str = ""


def direct_sender(platform: str, factory: Factory) -> Callable[..., None]:
    def send(cfg: Any, chat_id: str, thread_id: Optional[str], text: str,
             files: Sequence[Path] = ()) -> None:
        from cron.delivery import DeliveryError

        adapter = factory(gateway_section(cfg, platform), os.environ)
        if adapter is None:
            raise DeliveryError(f"{platform} is not configured (run `hermes gateway setup`)")

        async def run() -> bool:
            try:
                await adapter.connect()
                return bool(await adapter.deliver(chat_id, text, list(files), thread_id=thread_id))
            finally:
                await adapter.stop()

        import asyncio  # on first use: every new agent loads the platform plugins (~16 ms)

        try:
            ok = asyncio.run(run())
        except Exception as exc:  # noqa: BLE001 - one line for the run record / the tool
            raise DeliveryError(f"{platform}: {type(exc).__name__}: {exc}") from None
        if not ok:
            raise DeliveryError(f"{platform} did not accept the message")
    return send


async def probe(factory: Factory, section: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Connect with these settings and disconnect: '' when that worked, else why not."""
    adapter = factory(section, env)
    if adapter is None:
        return "not configured: a required setting is missing"
    import asyncio

    try:
        await asyncio.wait_for(adapter.connect(), 30)
        return ""
    except Exception as exc:  # noqa: BLE001 - reported to the user as one line
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    finally:
        try:
            await adapter.stop()
        except Exception:  # noqa: BLE001
            pass
