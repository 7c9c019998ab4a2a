"""What a platform setting must look like (pure), so ``hermes gateway setup`` names a pasted
token of the wrong kind (a Slack app token where the bot token goes, a Telegram token missing
its id) before anything is written or any server is asked. Keyed by Hermes' variable names; a
variable not listed here is checked only for stray whitespace."""
from __future__ import annotations

import re
from typing import Optional

_URL = r"https?://[^\s/]+(/\S*)?"
_LIST = r"[^,\s]+(\s*,\s*[^,\s]+)*"
SHAPES: dict[str, tuple[str, str]] = {  # variable -> (full-match pattern, what it looks like)
    "TELEGRAM_BOT_TOKEN": (r"\d{5,}:[A-Za-z0-9_-]{30,}",
                           "<bot id>:<35 characters>, as @BotFather gives it"),
    "TELEGRAM_ALLOWED_USERS": (r"\d+(\s*,\s*\d+)*", "numeric user ids, comma-separated"),
    "DISCORD_BOT_TOKEN": (r"[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{20,}",
                          "three dot-separated parts (Developer Portal -> Bot -> Reset Token)"),
    "DISCORD_ALLOWED_USERS": (r"\d+(\s*,\s*\d+)*", "numeric user ids, comma-separated"),
    "SLACK_BOT_TOKEN": (r"xoxb-[A-Za-z0-9-]+", "xoxb-…, the Bot User OAuth Token"),
    "SLACK_APP_TOKEN": (r"xapp-[A-Za-z0-9-]+", "xapp-…, an app-level token"),
    "SLACK_ALLOWED_USERS": (r"[UW][A-Z0-9]+(\s*,\s*[UW][A-Z0-9]+)*",
                            "member ids (U…), comma-separated"),
    "MATRIX_HOMESERVER": (_URL, "an http(s) URL such as https://matrix.example.org"),
    "MATRIX_USER_ID": (r"@[^:\s]+:\S+", "@name:server"),
    "MATRIX_ALLOWED_USERS": (r"@[^:\s,]+:[^\s,]+(\s*,\s*@[^:\s,]+:[^\s,]+)*",
                             "user ids (@name:server), comma-separated"),
    "EMAIL_ADDRESS": (r"[^@\s]+@[^@\s]+", "name@domain"),
    "EMAIL_IMAP_HOST": (r"[A-Za-z0-9.-]+", "a host name, without scheme or port"),
    "EMAIL_SMTP_HOST": (r"[A-Za-z0-9.-]+", "a host name, without scheme or port"),
    "EMAIL_ALLOWED_USERS": (r"[^@\s,]+@[^@\s,]+(\s*,\s*[^@\s,]+@[^@\s,]+)*",
                            "addresses, comma-separated"),
}


def problem(var: str, value: str, secret: bool = False) -> Optional[str]:
    """None when ``value`` fits ``var``; else one line saying what it should look like (a
    secret's value is never part of the line)."""
    shown = "the value" if secret else repr(value)
    if value != value.strip() or (secret and any(c.isspace() for c in value)):
        return f"{var}: {shown} has stray spaces; paste it again"
    shape = SHAPES.get(var)
    if shape is None or re.fullmatch(shape[0], value):
        return None
    return f"{var}: {shown} does not look right; expected {shape[1]}"
