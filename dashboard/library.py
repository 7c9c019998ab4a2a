"""The dashboard's read-mostly pages beyond the public API: session search, a skill's text and
history (and revert), a cron run's output, the gateway's status and log.

Everything shown passes through ``hermes_core.redact`` where it may hold a secret (logs, run
output); paths never leave ``HERMES_HOME`` (a run's output must be under ``cron/output``).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

from aiohttp import web

from dashboard.common import Refusal, body, handler, off_loop

LOG_LINES = 200
MAX_OUTPUT_BYTES = 256 * 1024


def _redacted(text: str) -> str:
    from hermes_core.redact import redact, secret_values

    return redact(text, secret_values())


def search(db: Any, query: str) -> dict[str, Any]:
    if not query.strip():
        return {"object": "list", "data": []}
    hits, more = db.search_sessions(query, limit=20, include_children=True)
    return {"object": "list", "data": hits, "has_more": more}


def skill_detail(name: str) -> dict[str, Any]:
    from hermes_core.config import hermes_home, load_config
    from tools.skills import history
    from tools.skills.bundled import catalog

    home = hermes_home()
    found = [s for s in catalog(home, load_config()).skills if s.name == name]
    root = home / "skills"
    versions = [v.to_dict() for v in history.versions(root, name)]
    if not found and not versions:
        raise Refusal(404, f"No skill named {name!r}.", "skill_not_found")
    skill = found[0] if found else None
    text = skill.skill_md.read_text(encoding="utf-8", errors="replace") if skill else ""
    return {"name": name, "exists": skill is not None, "text": text,
            "files": skill.files() if skill else [], "writable": bool(skill and skill.writable),
            "history": versions}


def revert_skill(name: str, number: Optional[int]) -> dict[str, Any]:
    from hermes_core.config import hermes_home, load_config
    from tools.skills.store import SkillStore, SkillStoreError

    try:
        version = SkillStore(hermes_home(), load_config(), actor="cli").revert(name, number)
    except SkillStoreError as exc:
        raise Refusal(400, str(exc), "revert_refused") from None
    return {**skill_detail(name), "reverted_to": version.number}


def run_output(db: Any, run_id: int) -> dict[str, Any]:
    from hermes_core.config import hermes_home

    run = db.get_cron_run(run_id)
    if run is None:
        raise Refusal(404, f"No cron run {run_id}.", "run_not_found")
    root = (hermes_home() / "cron" / "output").resolve()
    raw = run.get("output_path")
    path = Path(raw).resolve() if raw else None
    if path is None or root not in path.parents or not path.is_file():
        return {"run_id": run_id, "status": run.get("status"), "output": None,
                "error": run.get("error")}
    data = path.read_bytes()[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
    return {"run_id": run_id, "status": run.get("status"), "output": _redacted(data),
            "error": run.get("error"), "path": str(path)}


def status(server: Any) -> dict[str, Any]:
    from hermes_core.config import hermes_home

    try:
        gateway = json.loads((hermes_home() / "gateway.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        gateway = None
    runner = server.runner
    here = {"turns": runner.capacity.snapshot(), **runner.session_counts(),
            "turns_completed": runner.turns_completed,
            "runs_active": len(server.runs.active()) if hasattr(server, "runs") else 0}
    served_by = getattr(server, "dashboard_host", "gateway")
    return {"served_by": served_by, "this_process": here, "gateway": gateway, "now": time.time()}


def log_tail(lines: int) -> dict[str, Any]:
    from hermes_core.config import hermes_home

    logs = hermes_home() / "logs"
    out = {}
    for name in ("gateway.log", "dashboard.log"):
        path = logs / name
        if path.is_file():
            tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            out[name] = _redacted("\n".join(tail))
    return {"logs": out, "dir": str(logs)}


def register(server: Any) -> None:
    db = server.runner.db
    limit = getattr(server, "max_body", 1 << 20)

    @handler
    async def search_route(request: web.Request) -> Any:
        return await off_loop(search, db, request.query.get("q", "")[:500])

    @handler
    async def skill(request: web.Request) -> Any:
        return await off_loop(skill_detail, request.match_info["name"])

    @handler
    async def revert(request: web.Request) -> Any:
        data = await body(request, limit)
        number = data.get("version")
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
            raise Refusal(400, "'version' must be a version number (or null for the latest).",
                          "invalid_field")
        return await off_loop(revert_skill, request.match_info["name"], number)

    @handler
    async def output(request: web.Request) -> Any:
        try:
            run_id = int(request.match_info["run_id"])
        except ValueError:
            raise Refusal(400, "A cron run id is a number.", "invalid_field") from None
        return await off_loop(run_output, db, run_id)

    @handler
    async def status_route(_request: web.Request) -> Any:
        return await off_loop(status, server)

    @handler
    async def logs(request: web.Request) -> Any:
        return await off_loop(log_tail, LOG_LINES)

    base = "/api/dashboard"
    server.add_endpoint("dashboard_search", "GET", base + "/search", search_route)
    server.add_endpoint("dashboard_skill", "GET", base + "/skills/{name}", skill)
    server.add_endpoint("dashboard_skill_revert", "POST", base + "/skills/{name}/revert", revert)
    server.add_endpoint("dashboard_cron_output", "GET", base + "/cron/runs/{run_id}", output)
    server.add_endpoint("dashboard_status", "GET", base + "/status", status_route)
    server.add_endpoint("dashboard_logs", "GET", base + "/logs", logs)
