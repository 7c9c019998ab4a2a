"""Secrets never reach transcripts or logs: known secret values are masked wherever text leaves a
tool or an error message, and a shell started by the agent never receives them. Pure string work;
the values come from the environment, the configuration and the agent's own key.
"""
from __future__ import annotations

import functools
import os
import re
from typing import Any, Iterable, Mapping, Optional

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
MIN_SECRET_LEN = 8
MASK = "***"

# What a shell must not inherit: Hermes' own provider and platform secrets by name, plus anything
# named like a credential. Narrower than _SECRET_NAME (a shell does need e.g. SSH_AUTH_SOCK,
# KEYMAP).
SHELL_SECRET_NAMES = frozenset({
    "OPENAI_API_KEY", "OPENROUTER_API_KEY", "API_SERVER_KEY", "TELEGRAM_BOT_TOKEN",
    "HERMES_DATABASE_URL",
})
_SHELL_SECRET_PATTERN = re.compile(
    r"^HERMES_AUX_\w*KEY$|_API_KEY$|_SECRET_KEY$|_ACCESS_KEY$|_PRIVATE_KEY$|_PAT$|^PAT$"
    r"|TOKEN|SECRET|PASSWORD|PASSWD", re.I)
# Credentials recognised by their look (provider keys, GitHub/GitLab/Slack/AWS/Google tokens, a PEM
# private key): a shell variable holding one is dropped whatever its name, and the injection
# scanner refuses them in memory.
CREDENTIAL = re.compile(
    r"\b(sk-(proj-|ant-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}"
    r"|glpat-[A-Za-z0-9_-]{20})\b"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----")


def config_secrets(cfg: Any) -> list[str]:
    """Every key configured in config.yaml: the model's, each auxiliary task's, the gateway's."""
    if cfg is None:
        return []
    found: list[Optional[str]] = [getattr(getattr(cfg, "model", None), "api_key", None)]
    aux = getattr(cfg, "auxiliary", None)
    dumped = aux.model_dump() if hasattr(aux, "model_dump") else {}
    for task in dumped.values():
        if isinstance(task, dict):
            found.append(task.get("api_key"))
    gateway = getattr(cfg, "gateway", None)
    found += gateway.secrets() if hasattr(gateway, "secrets") else []  # GatewayConfig
    return [str(v) for v in found if isinstance(v, str) and v]


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    """Whether a variable of this name holds a secret: asked of every variable on every tool
    result, so each name is matched once (the values are read afresh each time)."""
    return bool(_SECRET_NAME.search(name))


def secret_values(extra: Iterable[Optional[str]] = ()) -> list[str]:
    """Values of secret-looking environment variables plus ``extra``, longest first."""
    found = {v for k, v in os.environ.items()
             if v and len(v) >= MIN_SECRET_LEN and _secret_name(k)}
    found.update(v for v in extra if v and len(v) >= MIN_SECRET_LEN)
    return sorted(found, key=len, reverse=True)


# Secrets recognised by their shape wherever they appear, known to us or not: the password of a
# URL (``scheme://user:password@host``) and the body of a PEM private key block (one cut short at
# the end of the text too).
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:'\"<>]*:)([^\s/@'\"<>]+)@")
_PEM_BLOCK = re.compile(r"(-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY(?: BLOCK)?-----)(.*?)"
                        r"(-----END \2PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S)
# key lines just before an END line whose BEGIN was cut off; lines end in a newline, or in a
# literal backslash-n when the text is JSON (a tool's result)
_PEM_TAIL = re.compile(r"(?:(?<=\\n)|(?<![A-Za-z0-9+/=\\-]))"
                       r"(?:[A-Za-z0-9+/=-]{16,}(?:\r?\n|(?:\\r)?\\n))+"
                       r"(?=-----END [A-Z0-9 ]*PRIVATE KEY)")


def _newline_of(text: str) -> str:
    return "\\n" if "\n" not in text and "\\n" in text else "\n"


def redact_shapes(text: str) -> str:
    """``text`` with URL passwords and private key blocks masked (the rest kept, so a masked
    ``postgresql://hermes:***@db/hermes`` still says where it points)."""
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    if "-----BEGIN" in text:
        text = _PEM_BLOCK.sub(lambda m: (nl := _newline_of(m.group(3))) and
                              f"{m.group(1)}{nl}{MASK}{nl}{m.group(4)}", text)
    if "PRIVATE KEY-----" in text:  # the end of a block whose start was cut off (tail)
        text = _PEM_TAIL.sub(lambda m: f"{MASK}{_newline_of(m.group(0))}", text)
    return text


def redact(text: str, secrets: Iterable[str]) -> str:
    """Known secret values, then secrets recognised by their shape (``redact_shapes``)."""
    for value in secrets:
        if value in text:
            text = text.replace(value, MASK)
    return redact_shapes(text)


def is_shell_secret(name: str) -> bool:
    """True for an environment variable a shell started by the agent must not see."""
    return name in SHELL_SECRET_NAMES or bool(_SHELL_SECRET_PATTERN.search(name))


def looks_like_secret(value: str) -> bool:
    """A value shaped like a credential: a URL with a password, a token format, a key block."""
    return bool(_URL_PASSWORD.search(value) or CREDENTIAL.search(value))


def shell_environment(env: Mapping[str, str], secret_vals: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without secrets: by name, by value shape (``looks_like_secret``), and any variable
    holding one of ``secret_vals``."""
    values = {v for v in secret_vals if v}
    return {k: v for k, v in env.items()
            if not is_shell_secret(k) and v not in values and not looks_like_secret(v)}
