"""``/cron`` for the REPL and for chats: one text in, one text out, the same words everywhere.

``/cron`` or ``/cron list``; ``/cron add <schedule> <prompt>``;
``/cron pause|resume|remove|run <job>``;
``/cron runs [<job>]``. A job made in a chat is delivered back to that chat by default (``origin``).
How ``run`` happens is the surface's business (the REPL waits and shows the answer; a chat hands
it to the gateway's scheduler), so the caller passes ``run``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from cron.jobs import (JobError, create_job, list_jobs, pause_job, remove_job, resolve_job,
                       resume_job)
from cron.policy import RunPolicy
from cron.schedule import split_schedule
from cron.views import describe_job, job_lines, run_lines

USAGE = ("Usage: /cron [list] · /cron add <schedule> <prompt> "
         "· /cron pause|resume|remove|run <job> "
         "· /cron runs [<job>]. Schedules: 'every 30m', 'in 2h', '0 8 * * *', or an ISO time.")


def handle(db: Any, arg: str, *, cfg: Any, origin: Optional[dict[str, Any]] = None,
           run: Optional[Callable[[dict[str, Any]], str]] = None, owner: Optional[str] = None,
           policy: Optional[RunPolicy] = None) -> str:
    """Do what ``/cron <arg>`` asks; every refusal comes back as text, never an exception.
    ``owner``: a chat user (only their jobs); ``policy``: what their jobs' runs may do."""
    action, _, rest = (arg or "").strip().partition(" ")
    action, rest = action.lower() or "list", rest.strip()
    try:
        if action in ("list", "ls"):
            return "\n".join(job_lines(list_jobs(db, owner)))
        if action in ("add", "create", "new"):
            schedule, prompt = split_schedule(rest)
            if not schedule:
                return "Start with a schedule. " + USAGE
            job = create_job(db, prompt=prompt, schedule=schedule, origin=origin, cfg=cfg,
                             owner=owner, policy=policy)
            return "Created " + describe_job(job) + "."
        if action in ("pause", "resume", "remove", "rm", "delete", "run", "runs") and not rest:
            if action == "runs":
                mine = {j["id"] for j in list_jobs(db, owner)}
                return "\n".join(run_lines([r for r in db.list_cron_runs(limit=200)
                                            if r["job_id"] in mine][:10]))
            return f"Which job? /cron {action} <id or name>"
        if action == "pause":
            job = pause_job(db, rest, owner)
            return f"Paused job {job['id']} ({job.get('name')})."
        if action == "resume":
            return "Resumed " + describe_job(resume_job(db, rest, owner=owner)) + "."
        if action in ("remove", "rm", "delete"):
            job = remove_job(db, rest, owner)
            return f"Removed job {job['id']} ({job.get('name')})."
        if action == "runs":
            job_id = resolve_job(db, rest, owner)["id"]
            return "\n".join(run_lines(db.list_cron_runs(job_id, limit=10)))
        if action == "run":
            job = resolve_job(db, rest, owner)
            return run(job) if run is not None else "Running jobs by hand is not available here."
    except JobError as exc:
        return f"Cannot do that: {exc}"
    return USAGE


def chat_command(db: Any, arg: str, origin: Optional[dict[str, Any]], owner: Optional[str] = None,
                 policy: Optional[RunPolicy] = None) -> str:
    """``/cron`` in a chat: the chat user's own jobs (``owner``), made here and delivered here,
    running under the gateway's limits (``policy``); ``run`` goes to the gateway's scheduler and
    answers at once (the result is delivered like a scheduled run)."""
    from hermes_core.config import load_config
    from cron.scheduler import active, background

    sched = active()
    cfg = sched.cfg if sched is not None else load_config()

    def run(job: dict[str, Any]) -> str:
        started, _future = background(db, cfg).run_now(job)
        where = ("its output file" if job.get("deliver") == "local"
                 else f"{job.get('deliver')}")
        return (f"Running job {job['id']} ({job.get('name')}) now (run {started['run_id']}); "
                f"the answer goes to {where}.")

    return handle(db, arg, cfg=cfg, origin=origin, run=run, owner=owner, policy=policy)
