"""Email: IMAP (aioimaplib; IDLE when the server offers it, else polling) in, SMTP (aiosmtplib)
out. A thread is a session: the chat is the sender's address, the thread id its first
Message-ID; a reply goes back in the thread with the right headers and the answer only.

Unread mail (``UNSEEN``) is read with ``BODY.PEEK`` and flagged ``\\Seen`` once handed to the
runner, so a mail server or gateway restart loses nothing: what was not flagged is read again,
and the Message-IDs already handled (kept in ``HERMES_HOME/platforms/email/<address>.json``
with each thread's headers) are never answered twice. Mail the bot was only copied on is for it
only when it names the bot; auto-replies, list mail and bounces are never answered.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from pathlib import Path
from typing import Any, Optional, Sequence

from gateway.platforms import settings as ps
from gateway.platforms.base import MessageEvent, PlatformAdapter, end_task
from gateway.platforms.email import compose, parse
from gateway.platforms.retrying import Permanent, retrying

log = logging.getLogger("gateway.email")

KEEP_SEEN = 2000  # handled Message-IDs remembered
SECURITY = ("ssl", "starttls", "none")


class EmailAdapter(PlatformAdapter):
    name = "email"
    max_message_length = 1_000_000  # one answer is one mail

    def __init__(self, address: str, password: str, imap_host: str, smtp_host: str, *,
                 username: str = "", imap_port: int = 993, smtp_port: int = 587,
                 imap_security: str = "ssl", smtp_security: str = "starttls",
                 poll_interval: float = 30.0, idle_timeout: float = 300.0,
                 mention_name: str = "hermes") -> None:
        super().__init__()
        self.address, self._password = address, password
        self.username = username or address
        self.imap = (imap_host, imap_port, imap_security)
        self.smtp = (smtp_host, smtp_port, smtp_security)
        self.poll_interval, self.idle_timeout = poll_interval, idle_timeout
        self.mention_name = mention_name
        self._task: Optional[asyncio.Task[None]] = None
        self._receiving = False
        self._state: dict[str, Any] = {"seen": [], "threads": {}}

    # -- lifecycle -------------------------------------------------------------------------------
    async def connect(self) -> None:
        """Check the IMAP login (a bad password fails here, naming the server)."""
        self._state = {"seen": [], "threads": {}, **ps.read_state(self._path())}
        client = await self._imap_login()
        with contextlib.suppress(Exception):
            await client.logout()

    async def start(self) -> None:
        await self.connect()
        self._receiving = True
        self._task = asyncio.ensure_future(self._receive_loop())
        log.info("email: reading %s on %s:%s", self.address, self.imap[0], self.imap[1])

    async def stop_receiving(self) -> None:
        self._receiving = False
        task, self._task = self._task, None
        await end_task(task)

    async def stop(self) -> None:
        await self.stop_receiving()

    def _path(self) -> Path:
        return ps.state_file("email", self.address)

    def _save(self) -> None:
        self._state["seen"] = self._state["seen"][-KEEP_SEEN:]
        threads = self._state["threads"]
        if len(threads) > KEEP_SEEN:
            self._state["threads"] = dict(list(threads.items())[-KEEP_SEEN:])
        try:
            ps.write_state(self._path(), self._state)
        except OSError as exc:
            log.warning("email: could not keep the thread state: %s", exc)

    # -- IMAP ------------------------------------------------------------------------------------
    async def _imap_login(self, lost: Optional[asyncio.Event] = None) -> Any:
        from aioimaplib import IMAP4

        host, port, security = self.imap
        context = ssl.create_default_context() if security == "ssl" else None
        client = IMAP4(host, port, timeout=30, ssl_context=context,
                       conn_lost_cb=(lambda _exc: lost.set()) if lost is not None else None)
        await client.wait_hello_from_server()
        resp = await client.login(self.username, self._password)
        if resp.result != "OK":
            raise RuntimeError(f"IMAP login as {self.username} on {host} was refused")
        resp = await client.select("INBOX")
        if resp.result != "OK":
            raise RuntimeError(f"IMAP: cannot open INBOX on {host}")
        return client

    async def _receive_loop(self) -> None:
        from hermes_core.retry import jittered_backoff

        failures = 0
        while self._receiving:
            lost = asyncio.Event()
            client = None
            try:
                client = await self._imap_login(lost)
                failures = 0
                while self._receiving and not lost.is_set():
                    await self._fetch_unseen(client)
                    await self._wait_for_mail(client, lost)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the server is away: wait for it
                failures += 1
                delay = jittered_backoff(failures, base=0.5, cap=15.0)
                log.warning("email: IMAP failed (%s: %s); retrying in %.1fs", type(exc).__name__,
                            " ".join(str(exc).split())[:200], delay)
                await asyncio.sleep(delay)
            finally:
                if client is not None:
                    await self._close(client)

    async def _wait_for_mail(self, client: Any, lost: asyncio.Event) -> None:
        if not client.has_capability("IDLE"):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(lost.wait(), self.poll_interval)
            return
        idle = await client.idle_start(timeout=self.idle_timeout)
        push = asyncio.ensure_future(client.wait_server_push(self.idle_timeout + 5))
        gone = asyncio.ensure_future(lost.wait())
        try:  # a push can be missed (mail landing as IDLE starts): look again each poll_interval
            await asyncio.wait({push, gone}, timeout=self.poll_interval,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:  # a stop cancels us here: nothing of this IDLE may stay pending
            for task in (push, gone):
                task.cancel()
            if not self._receiving:
                idle.cancel()
        if lost.is_set():
            idle.cancel()
            raise ConnectionError("the IMAP connection was lost")
        client.idle_done()
        await asyncio.wait_for(idle, 30)

    async def _close(self, client: Any) -> None:
        """Log out while running; when stopping, drop the connection at once (the server
        keeps nothing for a reader, so a polite LOGOUT only delays the gateway's stop)."""
        if self._receiving:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.logout(), 2)
            return
        for task in list(getattr(client, "tasks", ())):
            task.cancel()
        transport = getattr(client.protocol, "transport", None)
        if transport is not None:
            transport.close()

    async def _fetch_unseen(self, client: Any) -> None:
        resp = await client.uid_search("UNSEEN")
        uids = [u for line in resp.lines[:1] for u in bytes(line).decode().split() if u.isdigit()]
        for uid in uids:
            fetched = await client.uid("fetch", uid, "(BODY.PEEK[])")
            raw = max((bytes(x) for x in fetched.lines if isinstance(x, (bytes, bytearray))),
                      key=len, default=b"")
            await self._handle(raw)
            await client.uid("store", uid, "+FLAGS", "(\\Seen)")

    async def _handle(self, raw: bytes) -> None:
        mail = parse.parse(raw, self.address)
        if mail.message_id in self._state["seen"]:
            return
        self._state["seen"].append(mail.message_id)
        thread = self._state["threads"].setdefault(mail.thread, {"subject": mail.subject})
        thread.update(last=mail.message_id, refs=[*mail.references, mail.message_id][-20:])
        self._save()
        if mail.skip:
            log.info("email: not answering %s from %s: %s", mail.message_id, mail.sender, mail.skip)
            return
        if not mail.direct and not parse.mentions(mail.text, self.address, self.mention_name):
            return  # copied on a conversation between others
        await self.dispatch(MessageEvent(
            platform=self.name, chat_id=mail.sender, user_id=mail.sender, text=mail.text,
            chat_type="thread", user_name=mail.name, message_id=mail.message_id,
            thread_id=mail.thread, raw=None, attachments=mail.attachments))

    # -- SMTP ------------------------------------------------------------------------------------
    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        return await self._mail(chat_id, text, (), thread_id)

    async def deliver(self, chat_id: str, text: str, files: Sequence[Path] = (), *,
                      thread_id: Optional[str] = None) -> bool:
        return await self._mail(chat_id, text, [Path(f) for f in files], thread_id) is not None

    async def send_file(self, chat_id: str, path: Path, *, caption: str = "",
                        thread_id: Optional[str] = None) -> Optional[str]:
        return await self._mail(chat_id, caption, [path], thread_id)

    async def _mail(self, to: str, text: str, files: Sequence[Path],
                    thread_id: Optional[str]) -> Optional[str]:
        thread = self._state["threads"].get(thread_id or "") or {}
        subject = compose.reply_subject(thread["subject"]) if thread else compose.DEFAULT_SUBJECT
        msg = compose.message(self.address, to, subject, text, in_reply_to=thread.get("last"),
                              references=thread.get("refs", ()), files=files)
        sent = await retrying(lambda: self._smtp_send(msg), f"email: sending to {to}")
        if sent is None:
            return None
        if thread:
            sent_id = msg["Message-ID"]
            thread.update(last=sent_id, refs=[*thread.get("refs", []), sent_id][-20:])
            self._save()
        return str(msg["Message-ID"])

    async def _smtp_send(self, msg: Any) -> bool:
        import aiosmtplib

        host, port, security = self.smtp
        try:
            await aiosmtplib.send(msg, hostname=host, port=port, username=self.username,
                                  password=self._password, use_tls=security == "ssl",
                                  start_tls=True if security == "starttls" else False, timeout=60)
        except aiosmtplib.SMTPRecipientsRefused as exc:
            raise Permanent(f"the recipient was refused: {exc}") from None
        except aiosmtplib.SMTPAuthenticationError as exc:
            raise Permanent(f"SMTP login refused: {exc.message}") from None
        return True
