"""Images in messages: the OpenAI ``image_url`` part, what kind of image some bytes are, and how a
provider says it cannot read images. Pure; shared by the vision tool, the CLI's attachments, the
API server and the turn's error message.
"""
from __future__ import annotations

import base64
from typing import Any, Optional

IMAGE_PART_TYPES = ("image_url", "image", "input_image")
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"), (b"BM", "image/bmp"))
_REJECT_WORDS = ("image", "vision", "multimodal", "multi-modal", "image_url")
_REJECT_HOW = ("not support", "unsupported", "does not", "doesn't", "cannot", "can't",
               "not enabled", "not allowed", "only text", "text-only", "invalid content type",
               "unknown variant", "no vision", "not a multimodal")


def sniff_image(data: bytes) -> Optional[str]:
    """The MIME type of image bytes (PNG, JPEG, GIF, WebP, BMP), else None."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_part(url: str) -> dict[str, Any]:
    """An OpenAI chat ``image_url`` content part (``url``: http(s) or a data: URL)."""
    return {"type": "image_url", "image_url": {"url": url}}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def is_image_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in IMAGE_PART_TYPES


def has_images(content: Any) -> bool:
    return isinstance(content, list) and any(is_image_part(p) for p in content)


def rejects_images(message: str) -> bool:
    """A provider's error text saying the model cannot take image input."""
    low = message.lower()
    return any(w in low for w in _REJECT_WORDS) and any(h in low for h in _REJECT_HOW)


def chat_parts(content: Any) -> Any:
    """A chat message's content as the agent takes it: a string stays a string; a list keeps its
    text and image parts (``image_url`` objects or strings, Responses' ``input_image``), in order,
    and becomes plain text when it holds no image."""
    if not isinstance(content, list):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            parts.append(text_part(part))
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text"):
            parts.append(text_part(str(part.get("text") or "")))
        elif is_image_part(part):
            url = part.get("image_url", part.get("url", part.get("image")))
            url = url.get("url") if isinstance(url, dict) else url
            if isinstance(url, str) and url:
                parts.append(image_part(url))
    if not any(is_image_part(p) for p in parts):
        return "".join(p["text"] for p in parts)
    return parts
