"""What the agents here can use: ``GET /v1/skills`` and ``GET /v1/toolsets``.

Toolsets say which ones the API's agents get (``gateway.toolsets``; the terminal is off unless
listed) and why one is unavailable (a missing requirement), so a client can explain a refusal.
"""
from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web


def skill_object(skill: Any) -> dict[str, Any]:
    meta = skill.meta
    return {"object": "hermes.skill", "name": skill.name, "description": skill.description,
            "category": skill.category, "writable": bool(skill.writable),
            "bundled": bool(skill.bundled), "tags": list(meta.tags) if meta else [],
            "files": skill.files()}


def register(server: Any) -> None:
    runner = server.runner

    def config() -> Any:
        return getattr(runner.agent_factory, "config", None)

    async def skills(_request: web.Request) -> web.Response:
        def read() -> dict[str, Any]:
            from hermes_core.config import hermes_home
            from tools.skills.bundled import catalog

            found = catalog(hermes_home(), config())
            return {"object": "list", "data": [skill_object(s) for s in found.skills],
                    "skipped": [{"name": s.name, "reason": why} for s, why in found.skipped]}

        return web.json_response(await asyncio.to_thread(read))

    async def toolsets(_request: web.Request) -> web.Response:
        def read() -> dict[str, Any]:
            from agent.tool_policy import gateway_toolsets
            from tools.registry import check_toolset_requirements, toolset_tools

            cfg = config()
            from hermes_core.gateway_config import GatewayConfig

            gw = cfg.gateway if cfg is not None else GatewayConfig()
            enabled, disabled = gateway_toolsets(gw)
            missing = check_toolset_requirements()
            return {"object": "list", "data": [
                {"object": "hermes.toolset", "name": name, "tools": tools,
                 "enabled": name in enabled and name not in disabled,
                 "available": name not in missing, "unavailable_reason": missing.get(name)}
                for name, tools in toolset_tools().items()]}

        return web.json_response(await asyncio.to_thread(read))

    server.add_endpoint("skills_list", "GET", "/v1/skills", skills)
    server.add_endpoint("toolsets_list", "GET", "/v1/toolsets", toolsets)
    server.features.update(skills_api=True, toolsets_api=True)
