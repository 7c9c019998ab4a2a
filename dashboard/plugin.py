"""The dashboard as a plugin: the gateway mounts it on its API server when ``gateway.dashboard``
is true, through the ``api_routes`` registration (``gateway.route_plugins``). Nothing is imported
until it is mounted, so every other process pays nothing for it."""
from __future__ import annotations

from typing import Any


def mount(server: Any) -> None:
    from dashboard.routes import register as mount_on

    mount_on(server)


def register(ctx: Any) -> None:
    ctx.register_api_routes("dashboard", mount, setting="dashboard")
