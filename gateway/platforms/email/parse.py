"""An incoming email as the gateway sees it (pure): who sent it, which thread it belongs to (the
first ``References`` id, else ``In-Reply-To``, else its own ``Message-ID``: a thread is a
session), whether it addresses the bot, its new text without what it quotes (so a reply never
carries the conversation twice), and its attachments.

Mail that must not be answered is recognised here too: our own messages, auto-replies
(``Auto-Submitted``), bulk and list mail (``Precedence``), bounces (an empty or mailer-daemon
sender).
"""
from __future__ import annotations

import email
import email.policy
import html
import re
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr
from typing import Optional

from gateway.platforms.base import MAX_ATTACHMENT_BYTES, Attachment

_ATTRIBUTION = re.compile(r"^(On .{0,300}wrote:|Le .{0,300}a écrit ?:|Am .{0,300}schrieb .{0,100}:"
                          r"|-{2,} ?Original Message ?-{2,}|From: .+)\s*$", re.I)
_IDS = re.compile(r"<[^<>\s]+>")


@dataclass
class Incoming:
    sender: str  # lowercase address
    name: str
    subject: str
    message_id: str
    thread: str  # the first message of the thread
    references: list[str]
    text: str
    direct: bool  # the bot is in To: (not only Cc, a list, Bcc)
    attachments: list[Attachment] = field(default_factory=list)
    skip: Optional[str] = None  # why it must not be answered


def message_ids(value: str) -> list[str]:
    return _IDS.findall(value or "")


def strip_quoted(text: str) -> str:
    """The new part of a reply: quoted lines (``>``), the attribution line before them, a
    forwarded original, and the signature go."""
    kept: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.rstrip() == "--":  # "-- " signature separator
            break
        if line.lstrip().startswith(">"):
            continue
        if _ATTRIBUTION.match(line.strip()) and kept is not None:
            if line.strip().lower().startswith("from:") and kept and kept[-1].strip():
                kept.append(line)  # a "From:" inside the text itself, not a quoted header
                continue
            break
        kept.append(line)
    return "\n".join(kept).strip()


def _html_text(markup: str) -> str:
    markup = re.sub(r"(?is)<(script|style|blockquote)\b.*?</\1>", "", markup)
    markup = re.sub(r"(?i)<br\s*/?>|</p>|</div>", "\n", markup)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _body(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    text = part.get_content()
    return _html_text(text) if part.get_content_type() == "text/html" else str(text)


def _attachments(msg: EmailMessage) -> list[Attachment]:
    out: list[Attachment] = []
    for part in msg.iter_attachments():
        mime = part.get_content_type()
        kind = ("image" if mime.startswith("image/")
                else "voice" if mime.startswith("audio/") else "file")
        name = part.get_filename() or f"attachment.{mime.split('/')[-1]}"
        data = part.get_payload(decode=True) or b""
        if len(data) > MAX_ATTACHMENT_BYTES:
            out.append(Attachment(kind, name, mime, error="too large"))
        else:
            out.append(Attachment(kind, name, mime, bytes(data)))
    return out


def _skip(msg: EmailMessage, sender: str, own: str) -> Optional[str]:
    if not sender or sender == own.lower():
        return "our own message or no sender"
    if sender.split("@")[0] in ("mailer-daemon", "postmaster", "noreply", "no-reply"):
        return "a bounce or an unattended sender"
    if str(msg.get("Auto-Submitted", "no")).strip().lower() != "no":
        return "an automatic reply"
    if str(msg.get("Precedence", "")).strip().lower() in ("bulk", "list", "junk"):
        return "bulk or list mail"
    return None


def parse(raw: bytes, own_address: str) -> Incoming:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    name, sender = parseaddr(str(msg.get("From", "")))
    sender = sender.lower()
    own = message_ids(str(msg.get("Message-ID", "")))
    refs = message_ids(str(msg.get("References", "")))
    parent = message_ids(str(msg.get("In-Reply-To", "")))
    message_id = own[0] if own else f"<no-id-{abs(hash(raw))}@hermes>"
    thread = (refs or parent or [message_id])[0]
    to = {a.lower() for _n, a in getaddresses([str(v) for v in msg.get_all("To", [])])}
    return Incoming(sender, name, str(msg.get("Subject", "")), message_id, thread,
                    refs or parent, strip_quoted(_body(msg)), own_address.lower() in to,
                    _attachments(msg), _skip(msg, sender, own_address))


def mentions(text: str, own_address: str, name: str) -> bool:
    """A mail the bot was only copied on is for it when it names the bot."""
    low = text.lower()
    named = bool(name) and re.search(rf"\b{re.escape(name.lower())}\b", low) is not None
    return own_address.lower() in low or named
