"""The ``cronjob`` tool (SPEC §12): the agent schedules, lists, edits and runs jobs for its user.

Thin over ``cron.jobs``; a job created from a chat remembers the chat (``ctx.origin``) and is
delivered there (only there); a chat user (``ctx.owner``) sees and changes only their own jobs, and
a job records the creating agent's limits (``cron.policy``) for its runs. ``run`` starts the
job in the background (the gateway's scheduler, or this process) and returns at once: its answer
is delivered like a scheduled one.
"""
from __future__ import annotations

import json
from typing import Any
from tools.registry import ToolContext, ToolError, ToolSpec

ACTIONS = ("create", "list", "update", "pause", "resume", "remove", "run")


def _brief(job: dict[str, Any]) -> dict[str, Any]:
    from cron.views import job_view, next_run_text

    view = job_view(job)
    return {"id": view["id"], "name": view["name"], "schedule": view["schedule_display"],
            "next_run": next_run_text(job), "state": view["state"], "deliver": view["deliver"],
            "repeat": view["repeat"], "runs": view["run_count"], "last_status": view["last_status"]}


def cronjob(args: dict, ctx: ToolContext) -> str:
    from cron import jobs
    from cron.jobs import JobError
    from cron.policy import creator_policy

    db = ctx.session_db
    if db is None:
        raise ToolError("cronjob: the session store is unavailable, so jobs cannot be kept")
    action, ref, owner = args["action"], args.get("job_id"), ctx.owner  # a chat user: only theirs
    fields = {k: args.get(k) for k in ("name", "prompt", "schedule", "deliver", "repeat", "skills",
                                        "workdir")}
    try:
        if action == "list":
            mine = [_brief(j) for j in jobs.list_jobs(db, owner)]
            return json.dumps({"jobs": mine}, ensure_ascii=False)
        if action == "create":  # its runs get what this agent has, never more
            policy = creator_policy(ctx.platform, ctx.toolsets, ctx.confine_to, ctx.mutations)
            job = jobs.create_job(db, cfg=ctx.config, origin=ctx.origin, owner=owner, policy=policy,
                                  **fields)
            return json.dumps({"created": _brief(job)}, ensure_ascii=False)
        if not ref:
            raise ToolError(f"cronjob: action {action!r} needs job_id (an id or a unique name)")
        if action == "update":
            job = jobs.update_job(db, ref, cfg=ctx.config, owner=owner, **fields)
        elif action == "pause":
            job = jobs.pause_job(db, ref, owner)
        elif action == "resume":
            job = jobs.resume_job(db, ref, owner=owner)
        elif action == "remove":
            removed = jobs.remove_job(db, ref, owner)
            return json.dumps({"removed": _brief(removed)}, ensure_ascii=False)
        else:
            return _run(db, ctx, jobs.resolve_job(db, ref, owner))
        return json.dumps({"job": _brief(job)}, ensure_ascii=False)
    except JobError as exc:
        raise ToolError(f"cronjob: {exc}") from None


def _run(db: Any, ctx: ToolContext, job: dict[str, Any]) -> str:
    from cron.scheduler import background

    run, _future = background(db, ctx.config).run_now(job)
    return json.dumps({"started": {"run_id": run["run_id"], "job_id": job["id"],
                                   "deliver": job.get("deliver")},
                       "note": "runs in the background; "
                               "the answer is delivered like a scheduled run"})


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec(
        "cronjob",
        "Schedule prompts that run later or repeatedly in a fresh agent with no chat history; its "
        "answer is delivered automatically.",
        {"type": "object", "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "job_id": {"type": "string",
                       "description": "Job id or unique name (all but create/list)."},
            "name": {"type": "string", "description": "Short label."},
            "prompt": {"type": "string",
                       "description": "Self-contained instructions for each run."},
            "schedule": {"type": "string", "description": "'every 30m|2h|1d', 'in 30m' (once), "
                                                          "'0 8 * * *' (cron), or an ISO time."},
            "deliver": {"type": "string", "description": "origin (this chat), local, telegram, "
                                                         "telegram:<chat_id>; comma-separated."},
            "repeat": {"type": "integer", "description": "Stop after this many runs."},
            "skills": {"type": "array", "items": {"type": "string"},
                       "description": "Skill names attached to each run."},
            "workdir": {"type": "string", "description": "Working directory of the runs."},
        }, "required": ["action"]},
        cronjob, "cronjob", mutating=lambda args: args.get("action") != "list",
    ))
