"""The Matrix platform plugin (matrix-nio): ``register(ctx)`` only registers; nio is imported
when an adapter connects. Settings: ``MATRIX_HOMESERVER``, ``MATRIX_USER_ID`` and
``MATRIX_ACCESS_TOKEN`` (or ``MATRIX_PASSWORD``), ``MATRIX_ALLOWED_USERS``,
``MATRIX_HOME_CHANNEL``, else ``gateway.matrix.{homeserver, user_id, access_token, password,
device_id, accept_invites: allowed|all, sync_timeout, allowed_users, toolsets}``."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from gateway.platforms.direct import Question, direct_sender
from gateway.platforms.settings import as_mapping, pick

QUESTIONS = (
    Question("MATRIX_HOMESERVER", "Homeserver URL (e.g. https://matrix.example.org)"),
    Question("MATRIX_USER_ID", "The bot's user id (@hermes:example.org)"),
    Question("MATRIX_ACCESS_TOKEN", "Access token (empty: log in with a password)", secret=True,
             required=False),
    Question("MATRIX_PASSWORD", "Password (when no access token)", secret=True, required=False),
    Question("MATRIX_ALLOWED_USERS", "Allowed user ids, comma-separated (empty: pairing only)",
             required=False),
)


def build(section: Any, env: Mapping[str, str]) -> Optional[Any]:
    """The adapter for these settings; None when no homeserver/user/credential is set."""
    section = as_mapping(section)  # the gateway passes its typed section
    home = pick(section, env, "MATRIX_HOMESERVER", "homeserver", "homeserver_url")
    user = pick(section, env, "MATRIX_USER_ID", "user_id", "user")
    token = pick(section, env, "MATRIX_ACCESS_TOKEN", "access_token", "token", default="")
    password = pick(section, env, "MATRIX_PASSWORD", "password", default="")
    if not (home and user and (token or password)):
        return None
    from gateway.platforms.matrix.adapter import MatrixAdapter

    invites = str(pick(section, env, "MATRIX_ACCEPT_INVITES", "accept_invites", default="allowed"))
    return MatrixAdapter(str(home), str(user), str(token), str(password),
                         str(pick(section, env, "MATRIX_DEVICE_ID", "device_id", default="")),
                         accept_invites=invites.lower(),
                         sync_timeout=float(section.get("sync_timeout", 30)))


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_platform("matrix", build, send=direct_sender("matrix", build),
                          env=("MATRIX_ACCESS_TOKEN", "MATRIX_PASSWORD"), setup=QUESTIONS,
                          secrets=("MATRIX_ACCESS_TOKEN", "MATRIX_PASSWORD"))
