"""Chat platforms' messages into turns (a mixin of GatewayRunner): access first (pairing for
strangers), then slash commands, the turn limit, the busy policy; the turn runs in its own task
under the session's hold, with a typing indicator, and its answer (MEDIA lines as attachments)
goes back to the chat in order."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Awaitable, Callable, Optional

from gateway import replies, skills
from gateway.capacity import BUSY_CHAT_REPLY, TurnLimitReached
from gateway.commands import command
from gateway.lease import LeaseTimeout
from gateway.platforms.base import MessageEvent, PlatformAdapter
from gateway.sessions import key_for_event
from gateway.turn_state import TurnRequest

log = logging.getLogger("gateway.runner")


async def _noop_reply(_text: str) -> None:
    return None


class ChatEvents:
    """Needs the runner's access, adapters, capacity, busy_policy, spawn, hold, stop_turn and
    _run_locked (GatewayRunner)."""

    async def handle_event(self, event: MessageEvent) -> None:
        """Adapter callback: returns quickly; the turn runs in its own task."""
        adapter = self.adapters.get(event.platform)
        key = key_for_event(event)
        if not self.accepting:
            if self.access.is_allowed(event.platform, event.user_id) and (event.text.strip()
                                                                          or event.attachments):
                req = TurnRequest(event.text, key, event.user_id, persist_only=True)
                self.spawn(self._chat_turn(req, None, event.chat_id, _noop_reply), req)
            return
        if not self.access.is_allowed(event.platform, event.user_id):
            log.info("refused unknown user %s on %s; pairing code sent", event.user_id,
                     event.platform)
            text = await asyncio.to_thread(self.access.refusal, event.platform, event.user_id,
                                           event.user_name, event.chat_id)
            if text and event.respond is not None:
                await event.respond(text)
            elif adapter and text:  # None: answered recently (no reply per message)
                await adapter.send(event.chat_id, text, thread_id=event.thread_id)
            return
        if not event.text.strip() and not event.attachments:
            return

        async def reply(text: str) -> None:
            if text and event.respond is not None:  # a slash command's follow-up
                await event.respond(text)
            elif adapter and text:  # MEDIA: lines become attachments (gateway.replies)
                await replies.send_answer(adapter, event.chat_id, text, event.thread_id,
                                          replies.workdir_of(self))

        origin = {"platform": event.platform, "chat_id": event.chat_id,  # user_id: owner_of
                  "thread_id": event.thread_id, "user_id": event.user_id}
        if event.text.startswith("/") and await command(self, key, event.user_id, event.text, reply,
                                                        origin=origin):
            return
        try:
            self.capacity.admit()
        except TurnLimitReached as exc:
            log.warning("refused a message for %s: %s", key, exc)
            await reply(BUSY_CHAT_REPLY)
            return
        req = TurnRequest(event.text, key, event.user_id, notify=reply, origin=origin,
                          attachments=list(event.attachments))
        if self.busy_policy == "interrupt":
            self.stop_turn(key, event.text)  # the running turn, or one still waiting to start
        self.spawn(self._chat_turn(req, adapter, event.chat_id, reply),
                   req).add_done_callback(self.capacity.release)

    async def _chat_turn(self, req: TurnRequest, adapter: Optional[PlatformAdapter], chat_id: str,
                         reply: Callable[[str], Awaitable[None]]) -> None:
        try:
            await self._chat_turn_locked(req, adapter, chat_id, reply)
        except LeaseTimeout as exc:  # busy on another worker for too long: nothing was stored
            if not req.persist_only:
                with contextlib.suppress(Exception):
                    await reply(str(exc))
        except Exception as exc:  # e.g. the store failed while resolving the chat's session
            log.exception("message for %s could not be handled", req.key)
            if not req.persist_only:
                with contextlib.suppress(Exception):
                    await reply(f"Sorry, that failed: {type(exc).__name__}: {exc}. Your message "
                                "could not be saved; please send it again.")

    async def _chat_turn_locked(self, req: TurnRequest, adapter: Optional[PlatformAdapter],
                                chat_id: str, reply: Callable[[str], Awaitable[None]]) -> None:
        assert req.key is not None
        async with self.hold(req.key, req.user_id) as st:
            if req.abandoned:
                return
            if req.persist_only:  # arrived during the drain: keep it, in order, without a turn
                self._pending.remove(req)
                await asyncio.to_thread(self.db.append_message, st.sid, "user", req.text)
                log.info("draining: stored a message for %s without answering it", req.key)
                return
            thread = (req.origin or {}).get("thread_id")
            typing = (asyncio.ensure_future(self._keep_typing(adapter, chat_id, thread))
                      if adapter else None)
            try:
                if req.attachments and not await replies.prepare_turn(self, req, reply):
                    return  # images, voice, files -> the turn's content (gateway.media)
                if isinstance(req.text, str):
                    req.text = await skills.expand(self, req.text)  # /<skill> [text]: the skill
                outcome = await self._run_locked(st, req)
            finally:
                if typing:
                    typing.cancel()
            if outcome.kind != "interrupted" or outcome.text:
                await reply(outcome.text)
            if outcome.kind == "ok":
                # in the background, after the reply
                skills.after_reply(st.agent, outcome.result, reply)

    async def _keep_typing(self, adapter: PlatformAdapter, chat_id: str,
                           thread_id: Optional[str] = None) -> None:
        try:
            while True:
                if thread_id is None:
                    await adapter.typing(chat_id)
                else:
                    await adapter.typing(chat_id, thread_id)
                await asyncio.sleep(self.typing_interval)
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            log.debug("typing indicator failed: %s", exc)
