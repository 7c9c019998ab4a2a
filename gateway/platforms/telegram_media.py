"""Telegram's media both ways (issue 24), over python-telegram-bot's Bot.

In: a photo (its largest size), a voice note, an audio file or a document is downloaded through
``getFile`` into an ``Attachment`` (a document that is an image is shown to the model as one);
the caption is the message's text. Out: an image the agent names (``MEDIA:`` lines) goes up as a
photo, so the chat shows it inline, anything else as a document; Telegram refuses photos over
10 MB, so those are sent as documents too.
"""
from __future__ import annotations

import logging
import mimetypes
from pathlib import Path
from typing import Any, Optional

from gateway.platforms.base import MAX_ATTACHMENT_BYTES, Attachment

log = logging.getLogger("gateway.telegram")

PHOTO_LIMIT = 10 << 20  # the Bot API's limit for sendPhoto
PHOTO_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def media_of(msg: Any) -> Optional[tuple[str, Any, str, str]]:
    """(kind, the Telegram file object, a file name, its MIME type) of what a message carries,
    or None for a text message (pure)."""
    if msg.photo:
        return "image", msg.photo[-1], f"photo-{msg.message_id}.jpg", "image/jpeg"
    if msg.voice:
        return "voice", msg.voice, f"voice-{msg.message_id}.ogg", msg.voice.mime_type or \
            "audio/ogg"
    if msg.audio:
        return "voice", msg.audio, msg.audio.file_name or f"audio-{msg.message_id}", \
            msg.audio.mime_type or ""
    if msg.document:
        mime = msg.document.mime_type or ""
        kind = "image" if mime.startswith("image/") else "file"
        return kind, msg.document, msg.document.file_name or f"file-{msg.message_id}", mime
    return None


async def download(bot: Any, msg: Any) -> list[Attachment]:
    """The message's attachment, downloaded (or named with why it was not)."""
    from telegram.error import TelegramError

    found = media_of(msg)
    if found is None:
        return []
    kind, media, name, mime = found
    if int(getattr(media, "file_size", 0) or 0) > MAX_ATTACHMENT_BYTES:
        return [Attachment(kind, name, mime, error="too large to download")]
    try:
        handle = await bot.get_file(media.file_id)
        data = bytes(await handle.download_as_bytearray())
    except TelegramError as exc:
        log.warning("telegram: downloading %s failed: %s", name, exc)
        return [Attachment(kind, name, mime, error=str(exc).splitlines()[0][:200])]
    return [Attachment(kind, name, mime, data)]


async def upload(bot: Any, chat_id: int, path: Path, caption: str,
                 thread_id: Optional[int]) -> Any:
    """Send one file: a photo when it is a small image, else a document. Returns the Message."""
    data = path.read_bytes()
    common = {"chat_id": chat_id, "caption": caption or None, "message_thread_id": thread_id,
              "filename": path.name}
    if path.suffix.lower() in PHOTO_SUFFIXES and len(data) <= PHOTO_LIMIT \
            and path.suffix.lower() != ".gif":
        return await bot.send_photo(photo=data, **common)
    mime = mimetypes.guess_type(path.name)[0]
    log.debug("telegram: sending %s (%s) as a document", path.name, mime or "unknown type")
    return await bot.send_document(document=data, **common)
