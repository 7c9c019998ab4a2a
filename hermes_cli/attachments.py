"""Images attached to the next message: ``hermes chat --image PATH`` and ``/image PATH``.

The message becomes a list of content parts (the text, then each image as an ``image_url`` part
with a data: URL), which the agent sends and the store keeps like any other content. The
embedded local model reads text only, so attaching to it is refused up front, with what to do.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

from hermes_core.images import data_url, image_part, text_part

MAX_IMAGE_BYTES = 10_000_000


def read_image(path: str, cwd: Optional[Path] = None, max_bytes: int = MAX_IMAGE_BYTES
               ) -> dict[str, Any]:
    """The ``image_url`` part of an image file (relative paths against ``cwd``); ValueError with
    one line (which file, why) when it cannot be attached."""
    from tools.context import ToolContext, ToolError
    from tools.vision import load_image

    try:
        data, mime = load_image(path, ToolContext(cwd=cwd or Path.cwd()), max_bytes)
    except ToolError as exc:
        raise ValueError(f"cannot attach {path}: {exc}") from None
    return image_part(data_url(data, mime))


def check_provider(provider: str) -> None:
    if provider == "local":
        raise ValueError("the embedded local model reads text only, so it cannot see "
                              "images; choose a model that does (`hermes setup`, or --base-url "
                              "and -m)")


def with_images(text: str, images: list[dict[str, Any]]) -> Union[str, list[dict[str, Any]]]:
    """The user message: ``text`` alone, or the text followed by the image parts."""
    if not images:
        return text
    return [text_part(text), *images]


def max_bytes_of(cfg: Any) -> int:
    vision = getattr(getattr(cfg, "auxiliary", None), "vision", None)
    return int(getattr(vision, "max_image_bytes", MAX_IMAGE_BYTES))
