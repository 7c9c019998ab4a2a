"""The model providers Hermes knows, in one table: name -> default endpoint, key variables, whether
a key is required, the model used when none is configured. Pure (no I/O).

Why one table: the flags (`--provider`), `hermes setup`, `resolve_provider`, `hermes doctor` and the
error messages all read it, so a provider cannot be accepted by one and unknown to another. A new
provider (anthropic, ollama, …) is one more entry here.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Mapping, Optional

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENAI_BASE_URL = "https://api.openai.com/v1"
LOCAL_MODEL = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class ProviderInfo:
    name: str
    summary: str  # what it is, for --help, the set-up wizard and the unknown-name error
    base_url: Optional[str] = None  # its endpoint when none is configured
    key_vars: tuple[str, ...] = ()  # where its API key is read from; the first is the one named
    needs_key: bool = False  # a request without a key is refused before it is sent
    default_model: Optional[str] = None  # None: ask the endpoint's /v1/models
    needs_base_url: bool = False  # no endpoint of its own: the user gives one

    @property
    def key_var(self) -> Optional[str]:
        return self.key_vars[0] if self.key_vars else None


PROVIDERS: dict[str, ProviderInfo] = {p.name: p for p in (
    ProviderInfo("local", "the embedded model, offline, no key", default_model=LOCAL_MODEL),
    ProviderInfo("custom", "any OpenAI-compatible URL: vLLM, llama.cpp, Ollama, …",
                 key_vars=("OPENAI_API_KEY", "OPENROUTER_API_KEY"), needs_base_url=True),
    ProviderInfo("openai", "api.openai.com, needs OPENAI_API_KEY", OPENAI_BASE_URL,
                 ("OPENAI_API_KEY",), needs_key=True, default_model="gpt-4o-mini"),
    ProviderInfo("openrouter", "openrouter.ai, needs OPENROUTER_API_KEY", OPENROUTER_BASE_URL,
                 ("OPENROUTER_API_KEY",), needs_key=True,
                 default_model="anthropic/claude-sonnet-4"),
)}

# other spellings, Hermes Agent's included ("auto" means: work it out from what is configured)
ALIASES: dict[str, Optional[str]] = {
    "auto": None, "": None, "embedded": "local", "openai-compatible": "custom",
    "openai_compatible": "custom", "url": "custom", "ollama": "custom", "vllm": "custom",
    "llamacpp": "custom", "llama.cpp": "custom",
}


class UnknownProvider(ValueError):
    """A provider name that is not in the table; the message lists the known ones."""

    def __init__(self, name: str, hint: str = "", source: str = "") -> None:
        where = f" (from {source})" if source else ""
        super().__init__(f"unknown provider {name!r}{where}{hint}; "
                         f"known providers: {choices_text()}")
        self.name, self.hint = name, hint


def known_names() -> str:
    return ", ".join(PROVIDERS)


def choices_text() -> str:
    """`local (the embedded local model …), custom (…), …` for errors and help."""
    return ", ".join(f"{p.name} ({p.summary})" for p in PROVIDERS.values())


def lookup(name: Optional[str]) -> Optional[ProviderInfo]:
    """The provider a name means; None for "auto"/unset (detect it). Raises UnknownProvider."""
    key = (name or "").strip().lower()
    if key in ALIASES:
        target = ALIASES[key]
        return PROVIDERS[target] if target else None
    if key in PROVIDERS:
        return PROVIDERS[key]
    close = difflib.get_close_matches(key, list(PROVIDERS) + [a for a in ALIASES if a], n=1)
    raise UnknownProvider(str(name), f"; did you mean {close[0]}?" if close else "")


def detect(base_url: Optional[str], explicit_key: Optional[str],
           env: Mapping[str, str]) -> ProviderInfo:
    """The provider when none is named: a base URL means custom; else an OpenRouter key alone means
    OpenRouter, any other key OpenAI; nothing at all, the embedded model."""
    if base_url:
        return PROVIDERS["custom"]
    if env.get("OPENROUTER_API_KEY") and not env.get("OPENAI_API_KEY") and not explicit_key:
        return PROVIDERS["openrouter"]
    if explicit_key or env.get("OPENAI_API_KEY") or env.get("OPENROUTER_API_KEY"):
        return PROVIDERS["openai"]
    return PROVIDERS["local"]


def key_from_env(info: ProviderInfo, env: Mapping[str, str]) -> Optional[str]:
    return next((env[v] for v in info.key_vars if env.get(v)), None)


def missing_key_message(info: ProviderInfo) -> str:
    return (f"provider {info.name} needs an API key and none is set: set {info.key_var} (in "
            "the environment, or `hermes config set model.api_key KEY`, which keeps it in .env) "
            "or run `hermes setup`")


def missing_url_message(info: ProviderInfo) -> str:
    return (f"provider {info.name} needs a base URL: set OPENAI_BASE_URL, `hermes config set "
            "model.base_url URL` or --base-url (e.g. http://localhost:8000/v1), or run "
            "`hermes setup`")
