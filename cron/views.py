"""How jobs and runs read: JSON views (API, ``--json``, the tool) and the text tables and lines
shared by ``hermes cron`` and ``/cron``. Pure formatting."""
from __future__ import annotations

from typing import Any

from cron.schedule import Schedule, ScheduleError, describe, format_time, get_zone, iso_utc


def job_view(job: dict[str, Any]) -> dict[str, Any]:
    """A job as JSON for the API, ``list --json`` and the tool (times in UTC ISO 8601)."""
    try:
        shown = describe(Schedule.from_text(job["schedule"]), get_zone(job.get("timezone")))
    except ScheduleError:
        shown = job["schedule"]
    return {
        "id": job["id"], "name": job.get("name"), "prompt": job.get("prompt"),
        "schedule": job["schedule"], "schedule_display": shown, "timezone": job.get("timezone"),
        "deliver": job.get("deliver"), "origin": job.get("origin"),
        "skills": job.get("skills") or [],
        "workdir": job.get("workdir"), "repeat": job.get("repeat"),
        "run_count": job.get("run_count", 0),
        "state": job.get("state"), "next_run_at": iso_utc(job.get("next_run_at")),
        "created_at": iso_utc(job.get("created_at")),
        "last_run_at": iso_utc(job.get("last_run_at")),
        "last_status": job.get("last_status"),
    }


def run_view(run: dict[str, Any]) -> dict[str, Any]:
    keep = ("id", "job_id", "trigger", "status", "session_id", "output_path", "error", "note",
            "delivery", "claimed_by")
    out = {k: run.get(k) for k in keep}
    for k in ("scheduled_at", "started_at", "finished_at"):
        out[k] = iso_utc(run.get(k))
    return out


def _cut(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def next_run_text(job: dict[str, Any]) -> str:
    """The next run in the job's zone, e.g. ``2026-12-01 08:00 CET`` ('-' when none)."""
    try:
        return format_time(job.get("next_run_at"), get_zone(job.get("timezone")))
    except ScheduleError:
        return "?"


def job_lines(jobs: list[dict[str, Any]]) -> list[str]:
    """The job table."""
    if not jobs:
        return ["No scheduled jobs. Create one: hermes cron create 'every 1h' 'what to do'"]
    out = [f"{'ID':<9} {'NAME':<24} {'SCHEDULE':<26} {'NEXT RUN':<21} {'STATE':<10} "
           f"{'DELIVER':<14} LAST"]
    for j in jobs:
        out.append(f"{j['id']:<9} {_cut(j.get('name') or '-', 24):<24} "
                   f"{_cut(job_view(j)['schedule_display'], 26):<26} {next_run_text(j):<21} "
                   f"{j['state']:<10} {_cut(j.get('deliver') or '-', 14):<14} "
                   f"{j.get('last_status') or '-'}")
    return out


def describe_job(job: dict[str, Any]) -> str:
    """The one line after create, edit or resume."""
    when = f"next run {next_run_text(job)}" if job["state"] == "scheduled" else job["state"]
    repeat = f", {job['repeat']} run(s) in all" if job.get("repeat") else ""
    return (f"job {job['id']} ({job.get('name')}): {job_view(job)['schedule_display']}{repeat}, "
            f"{when}, delivers to {job.get('deliver')}")


def run_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The run table, in the system's zone (runs of several jobs share it)."""
    if not runs:
        return ["No runs yet."]
    zone = get_zone(None)
    out = [f"{'RUN':>5} {'JOB':<9} {'SCHEDULED':<21} {'TRIGGER':<8} {'STATUS':<12} DETAILS"]
    for r in runs:
        detail = r.get("error") or r.get("output_path") or r.get("note") or ""
        if r.get("delivery"):
            detail += f" [delivery: {r['delivery']}]"
        out.append(f"{r['id']:>5} {r['job_id']:<9} {format_time(r['scheduled_at'], zone):<21} "
                   f"{r['trigger']:<8} {r['status']:<12} {_cut(detail, 120)}")
    return out
