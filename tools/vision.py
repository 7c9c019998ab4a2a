"""vision_analyze: ask a model that reads images about a local image or an image URL.

The image is sent as an ``image_url`` part (a data: URL: the model's server need not reach our
files or the URL) to ``auxiliary.vision`` (provider/model/base_url/api_key, any provider: a
plugin's such as ``anthropic`` too; ``hermes_core.auxiliary``); unset, to the agent's own
provider and model. URLs are fetched through web_extract's SSRF guard; local paths
follow the file tools' rules (confined agents reach only their directory). A model that rejects
images, and the embedded local model (text only), give an error that says what to configure.
``load_image`` is shared with the CLI's ``--image``/``/image`` attachments.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from hermes_core.images import data_url, image_part, rejects_images, sniff_image, text_part
from tools.context import ToolContext, ToolError
from tools.registry import ToolSpec

SETUP_HINT = ("set auxiliary.vision.model (and base_url/api_key, or provider) in config.yaml to a "
              "model that reads images")


@dataclass(frozen=True)
class VisionTarget:
    provider: str
    base_url: Optional[str]
    api_key: Optional[str]
    model: str
    timeout: float
    settings: Any = None  # the ProviderSettings (a plugin provider's client is made from them)


def _config(ctx: Optional[ToolContext]) -> Any:
    cfg = getattr(ctx, "config", None)
    if cfg is None:
        from hermes_core.config import load_config

        cfg = load_config()
    return cfg


def vision_target(ctx: Optional[ToolContext]) -> VisionTarget:
    """Where vision questions go: auxiliary.vision, else the agent's own provider and model
    (without an agent: the configured main model)."""
    from hermes_core.auxiliary import resolve_auxiliary
    from hermes_core.provider_settings import resolve_provider

    cfg = _config(ctx)
    main = getattr(getattr(ctx, "agent", None), "provider_settings", None)
    s = resolve_auxiliary(cfg, "vision", main if main is not None else resolve_provider(cfg))
    return VisionTarget(s.provider, s.base_url, s.api_key, s.model, cfg.auxiliary.vision.timeout,
                        s)


def load_image(source: str, ctx: Any, max_bytes: int) -> tuple[bytes, str]:
    """(bytes, MIME type) of a local path (against ``ctx.cwd``) or an http(s) URL; ToolError
    (one line) when it is missing, too big or not an image."""
    source = (source or "").strip()
    if not source:
        raise ToolError("'image' is empty: give a file path or an http(s) URL")
    if source.startswith(("http://", "https://")):
        data = _fetch_image(source, ctx, max_bytes)
    else:
        from tools.file_access import resolve_path

        path, _ = resolve_path(ctx, source)
        if not path.is_file():
            raise ToolError(f"{path}: no such image file")
        if path.stat().st_size > max_bytes:
            raise ToolError(f"{path} is larger than {max_bytes:,} bytes "
                            "(auxiliary.vision.max_image_bytes)")
        data = path.read_bytes()
    mime = sniff_image(data)
    if mime is None:
        raise ToolError(f"{source} is not an image (PNG, JPEG, GIF, WebP or BMP)")
    return data, mime


def _fetch_image(url: str, ctx: Any, max_bytes: int) -> bytes:
    from dataclasses import replace

    from tools.web.fetch import FetchError, FetchOptions, fetch_pages

    opts = replace(FetchOptions.from_config(_config(ctx).web), max_bytes=max_bytes + 1)
    page = fetch_pages([url], opts)[0]
    if isinstance(page, FetchError):
        raise ToolError(f"{url}: {page}")
    if page.status >= 400:
        raise ToolError(f"{url}: the server answered HTTP {page.status}")
    if page.truncated or len(page.body) > max_bytes:
        raise ToolError(f"{url} is larger than {max_bytes:,} bytes "
                        "(auxiliary.vision.max_image_bytes)")
    return page.body


def ask(target: VisionTarget, parts: list[dict], tool: str) -> str:
    """One chat request with ``parts`` as the user message; the model's answer text."""
    import openai

    if target.provider == "local":
        raise ToolError(f"{tool}: the embedded local model reads text only; {SETUP_HINT}")
    if target.settings is not None and target.settings.api != "openai":
        return _ask_plugin(target, parts, tool)
    client = openai.OpenAI(base_url=target.base_url, api_key=target.api_key or "no-key",
                           timeout=target.timeout, max_retries=1)
    try:
        resp = client.chat.completions.create(
            model=target.model, messages=[{"role": "user", "content": parts}])
    except openai.APIStatusError as exc:
        detail = _detail(exc)
        if exc.status_code in (400, 404, 415, 422) and rejects_images(detail):
            raise ToolError(f"{tool}: the model {target.model} does not accept images "
                            f"({detail}); {SETUP_HINT}") from None
        raise ToolError(f"{tool}: the vision model {target.model} at {target.base_url} failed: "
                        f"HTTP {exc.status_code} ({detail})") from None
    except openai.APIError as exc:
        raise ToolError(f"{tool}: cannot reach the vision model at {target.base_url}: "
                        f"{exc}") from None
    finally:
        client.close()
    return _answer(resp, target, tool)


def _ask_plugin(target: VisionTarget, parts: list[dict], tool: str) -> str:
    """The same question through a plugin provider's client (it speaks OpenAI shapes)."""
    from hermes_core.provider_table import plugin_client

    client = plugin_client(target.settings)
    try:
        resp = client.chat.completions.create(
            model=target.model, messages=[{"role": "user", "content": parts}],
            timeout=target.timeout)
    except Exception as exc:  # noqa: BLE001 - any SDK's failure becomes the tool's one line
        detail = " ".join(str(exc).split())[:300]
        if rejects_images(detail):
            raise ToolError(f"{tool}: the model {target.model} does not accept images "
                            f"({detail}); {SETUP_HINT}") from None
        raise ToolError(f"{tool}: the vision model {target.model} at {target.base_url} "
                        f"failed: {detail}") from None
    finally:
        getattr(client, "close", lambda: None)()
    return _answer(resp, target, tool)


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _answer(resp: Any, target: VisionTarget, tool: str) -> str:
    """The answer's text: the SDK's objects or a plugin client's ``chat.completion`` dict."""
    choices = _get(resp, "choices") or []
    text = str(_get(_get(choices[0], "message"), "content") or "").strip() if choices else ""
    if not text:
        raise ToolError(f"{tool}: the vision model {target.model} answered nothing")
    return text


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if msg:
            return " ".join(str(msg).split())[:300]
    return " ".join(str(getattr(exc, "message", exc)).split())[:300]


def analyze_image_bytes(ctx: ToolContext, data: bytes, mime: str, question: str,
                        tool: str = "vision_analyze") -> str:
    parts = [text_part(question), image_part(data_url(data, mime))]
    return ask(vision_target(ctx), parts, tool)


def vision_analyze(args: dict, ctx: ToolContext) -> str:
    question = str(args.get("question") or "").strip() or "Describe this image in detail."
    max_bytes = _config(ctx).auxiliary.vision.max_image_bytes
    try:
        data, mime = load_image(str(args.get("image") or ""), ctx, max_bytes)
    except ToolError as exc:
        raise ToolError(f"vision_analyze: {exc}") from None
    return analyze_image_bytes(ctx, data, mime, question)


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_toolset("vision", "look at images", default=True)
    ctx.register_tool(ToolSpec(
        "vision_analyze", "Ask a vision model about an image (local path or http(s) URL).",
        {"type": "object", "properties": {
            "image": {"type": "string", "description": "File path or image URL."},
            "question": {"type": "string", "description": "What to find out."},
        }, "required": ["image"]},
        vision_analyze, "vision"))

