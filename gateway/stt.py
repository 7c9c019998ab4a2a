"""Voice notes as text: speech-to-text for chat platforms (``stt:`` in config.yaml).

``stt.provider``:
- any OpenAI-compatible ``/audio/transcriptions`` endpoint (``openai``, ``groq`` or a name of your
  own with ``stt.base_url``): ``stt.base_url`` > ``stt.<provider>.base_url`` > ``STT_BASE_URL`` >
  the provider's public URL; key ``stt.api_key`` > ``stt.<provider>.api_key`` >
  ``VOICE_TOOLS_OPENAI_KEY`` > ``GROQ_API_KEY`` (groq) > ``OPENAI_API_KEY``; ``stt.model``
  (default ``whisper-1``, groq ``whisper-large-v3-turbo``);
- ``local``: faster-whisper on this machine, only with ``stt.local.model_path`` (a CTranslate2
  model directory). Hermes never downloads a model by itself.

``settings`` is pure; ``transcribe`` does the I/O and raises ``SpeechError`` with one line that
says what to set.
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional

PUBLIC_URLS = {"openai": "https://api.openai.com/v1", "groq": "https://api.groq.com/openai/v1"}
DEFAULT_MODELS = {"groq": "whisper-large-v3-turbo"}
TIMEOUT = 120.0


class SpeechError(RuntimeError):
    """A voice note could not be transcribed; the text says why and what to set."""


@dataclass(frozen=True)
class SttSettings:
    provider: str  # "" when nothing is configured
    base_url: str = ""
    api_key: str = ""
    model: str = "whisper-1"
    model_path: str = ""
    language: str = ""


def _section(cfg: Any) -> Mapping[str, Any]:
    raw = getattr(cfg, "stt", None) if cfg is not None else None
    return raw if isinstance(raw, dict) else {}


def settings(cfg: Any, env: Optional[Mapping[str, str]] = None) -> SttSettings:
    """What ``stt:`` asks for (pure over ``cfg`` and ``env``)."""
    env = os.environ if env is None else env
    stt = _section(cfg)
    if stt.get("enabled") is False:
        return SttSettings("")
    provider = str(stt.get("provider") or env.get("STT_PROVIDER") or "").strip().lower()
    if not provider and (stt.get("base_url") or env.get("STT_BASE_URL")):
        provider = "openai"
    own = stt.get(provider) if isinstance(stt.get(provider), dict) else {}
    language = str(stt.get("language") or own.get("language") or "")
    if provider == "local":
        path = str(own.get("model_path") or stt.get("model_path") or "")
        return SttSettings("local" if path else "", model_path=path, language=language)
    if not provider:
        return SttSettings("")
    base = str(stt.get("base_url") or own.get("base_url") or env.get("STT_BASE_URL")
               or PUBLIC_URLS.get(provider, ""))
    keys = [stt.get("api_key"), own.get("api_key"), env.get("VOICE_TOOLS_OPENAI_KEY"),
            env.get("GROQ_API_KEY") if provider == "groq" else None, env.get("OPENAI_API_KEY")]
    model = str(stt.get("model") or own.get("model") or DEFAULT_MODELS.get(provider, "whisper-1"))
    return SttSettings(provider, base.rstrip("/"), next((str(k) for k in keys if k), ""), model,
                       language=language)


def problem(s: SttSettings) -> Optional[str]:
    """Why voice notes cannot be transcribed with these settings, or None."""
    if not s.provider:
        return ("voice notes need speech-to-text: set stt.provider (an OpenAI-compatible endpoint: "
                "stt.base_url, stt.api_key) or stt.provider: local with stt.local.model_path")
    if s.provider != "local" and not s.base_url:
        return f"stt.provider {s.provider!r} needs stt.base_url"
    return None


async def transcribe(s: SttSettings, data: bytes, name: str, mime: str = "") -> str:
    """The text of one voice note."""
    why = problem(s)
    if why:
        raise SpeechError(why)
    if s.provider == "local":
        return await asyncio.to_thread(_local, s, data)
    return await _remote(s, data, name, mime)


async def _remote(s: SttSettings, data: bytes, name: str, mime: str) -> str:
    import aiohttp

    form = aiohttp.FormData()
    form.add_field("file", data, filename=name or "voice.ogg",
                   content_type=mime or "application/octet-stream")
    form.add_field("model", s.model)
    if s.language:
        form.add_field("language", s.language)
    headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
    url = f"{s.base_url}/audio/transcriptions"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT)) as http:
            async with http.post(url, data=form, headers=headers) as resp:
                body = await resp.text()
                if resp.status != 200:
                    raise SpeechError(f"speech-to-text at {s.base_url} answered HTTP "
                                      f"{resp.status}: {' '.join(body.split())[:200]}")
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        raise SpeechError(f"speech-to-text at {s.base_url} is unreachable "
                          f"({type(exc).__name__}); check stt.base_url") from None
    return _text_of(body)


def _text_of(body: str) -> str:
    import json

    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()  # response_format=text servers
    return str(data.get("text") or "").strip() if isinstance(data, dict) else ""


def _local(s: SttSettings, data: bytes) -> str:
    import io

    try:
        from faster_whisper import WhisperModel
    except ImportError:
        raise SpeechError("stt.provider local needs faster-whisper (pip install "
                          "'hermes-runtime[stt-local]')") from None
    if not os.path.isdir(s.model_path):
        raise SpeechError(f"stt.local.model_path {s.model_path!r} is not a model directory")
    model = WhisperModel(s.model_path, device="cpu", compute_type="int8")
    segments, _info = model.transcribe(io.BytesIO(data), language=s.language or None)
    return " ".join(seg.text.strip() for seg in segments).strip()
