"""The email platform plugin (IMAP + SMTP): ``register(ctx)`` only registers. Settings:
``EMAIL_ADDRESS``, ``EMAIL_PASSWORD``, ``EMAIL_IMAP_HOST``, ``EMAIL_SMTP_HOST`` (ports
``EMAIL_IMAP_PORT`` 993, ``EMAIL_SMTP_PORT`` 587), ``EMAIL_ALLOWED_USERS`` (sender addresses),
``EMAIL_HOME_CHANNEL``, else ``gateway.email.{address, password, username, imap_host, imap_port,
imap_security: ssl|starttls|none, smtp_host, smtp_port, smtp_security, poll_interval,
idle_timeout, mention_name, allowed_users, toolsets}``."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from gateway.platforms.direct import Question, direct_sender
from gateway.platforms.settings import as_mapping, pick

QUESTIONS = (
    Question("EMAIL_ADDRESS", "The bot's email address"),
    Question("EMAIL_PASSWORD", "Its password (or app password)", secret=True),
    Question("EMAIL_IMAP_HOST", "IMAP server (e.g. imap.example.org)"),
    Question("EMAIL_SMTP_HOST", "SMTP server (e.g. smtp.example.org)"),
    Question("EMAIL_ALLOWED_USERS", "Sender addresses allowed to talk to it, comma-separated",
             required=False),
)


def build(section: Any, env: Mapping[str, str]) -> Optional[Any]:
    section = as_mapping(section)  # the gateway passes its typed section
    address = pick(section, env, "EMAIL_ADDRESS", "address")
    password = pick(section, env, "EMAIL_PASSWORD", "password")
    imap_host = pick(section, env, "EMAIL_IMAP_HOST", "imap_host")
    if not (address and password and imap_host):
        return None
    from gateway.platforms.email.adapter import EmailAdapter

    smtp_host = pick(section, env, "EMAIL_SMTP_HOST", "smtp_host", default=imap_host)
    return EmailAdapter(
        str(address), str(password), str(imap_host), str(smtp_host),
        username=str(pick(section, env, "EMAIL_USERNAME", "username", default="")),
        imap_port=int(pick(section, env, "EMAIL_IMAP_PORT", "imap_port", default=993)),
        smtp_port=int(pick(section, env, "EMAIL_SMTP_PORT", "smtp_port", default=587)),
        imap_security=str(section.get("imap_security", "ssl")).lower(),
        smtp_security=str(section.get("smtp_security", "starttls")).lower(),
        poll_interval=float(section.get("poll_interval", 30)),
        idle_timeout=float(section.get("idle_timeout", 300)),
        mention_name=str(section.get("mention_name", "hermes")))


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_platform("email", build, send=direct_sender("email", build),
                          env=("EMAIL_ADDRESS",), setup=QUESTIONS, secrets=("EMAIL_PASSWORD",))
