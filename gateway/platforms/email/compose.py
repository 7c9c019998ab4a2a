"""Outgoing mail (pure): a reply in the thread (``Re:`` subject, ``In-Reply-To`` and
``References``, so every client threads it), the answer as plain text with an HTML alternative,
and the agent's files as attachments. A reply quotes nothing: the thread already holds it."""
from __future__ import annotations

import mimetypes
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Optional, Sequence

from gateway.platforms.markup import looks_formatted, markdown_html

DEFAULT_SUBJECT = "A message from Hermes"


def reply_subject(subject: str) -> str:
    subject = " ".join(subject.split()) or DEFAULT_SUBJECT
    return subject if subject.lower().startswith("re:") else f"Re: {subject}"


def message(sender: str, to: str, subject: str, text: str, *, in_reply_to: Optional[str] = None,
            references: Sequence[str] = (), files: Sequence[Path] = (),
            domain: Optional[str] = None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    msg["Date"] = formatdate(localtime=True)
    msg["Message-ID"] = make_msgid(domain=domain or sender.rpartition("@")[2] or None)
    msg["Auto-Submitted"] = "auto-replied" if in_reply_to else "auto-generated"  # RFC 3834
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = " ".join(dict.fromkeys([*references, in_reply_to]))
    msg.set_content(text or "(see the attachments)")
    if text and looks_formatted(text):
        msg.add_alternative(f"<html><body>{markdown_html(text)}</body></html>", subtype="html")
    for path in files:
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        main, _, sub = mime.partition("/")
        msg.add_attachment(path.read_bytes(), maintype=main, subtype=sub, filename=path.name)
    return msg
