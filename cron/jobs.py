"""Jobs: create, edit, pause, resume, remove, and find one by id or unique name (SPEC §12).

Every surface (``hermes cron``, the ``cronjob`` tool, ``/cron``, the API) goes through these
functions, so the same bad input is refused with the same words everywhere. Jobs live in the
session store (``SessionDB.*_cron_job``); ``JobError`` is the one failure type, one line each.
``owner`` (a chat user's ``"<platform>:<user id>"``; None: the owner, who sees all) scopes every
lookup, and a job keeps its creator's ``policy`` (``cron.policy``).
"""
from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any, Optional

from cron import delivery
from cron.policy import RunPolicy, delivery_problem, visible, workdir_problem
from cron.schedule import Schedule, ScheduleError, first_run, get_zone, parse_schedule

MAX_PROMPT_CHARS = 20_000
MAX_NAME_CHARS = 80
EDITABLE = ("name", "prompt", "schedule", "deliver", "repeat", "skills", "workdir")


class JobError(ValueError):
    """Bad input or an unknown job; the message says what to do instead."""


class JobNotFound(JobError):
    """No job has that id or name."""


class AmbiguousJob(JobError):
    """Several jobs share that name; the message lists their ids."""


def _clean_prompt(prompt: Any) -> str:
    """A prompt runs unattended, again and again: one that looks like prompt injection or secret
    exfiltration (``agent.injection``, as for memory) is refused, not stored."""
    from hermes_core.injection import scan

    if not isinstance(prompt, str) or not prompt.strip():
        raise JobError("the prompt is empty: say what the job should do")
    prompt = prompt.strip()
    if len(prompt) > MAX_PROMPT_CHARS:
        raise JobError(f"the prompt is {len(prompt):,} characters; "
                       f"the limit is {MAX_PROMPT_CHARS:,}")
    reason = scan(prompt)
    if reason:
        raise JobError(f"the prompt contains {reason}; scheduled prompts run unattended, so it was "
                       "not saved. Rephrase it without that")
    return prompt


def _clean_name(name: Any, prompt: str) -> str:
    if name is None or (isinstance(name, str) and not name.strip()):
        words = " ".join(prompt.split())
        return words if len(words) <= 40 else words[:40].rsplit(" ", 1)[0] + "…"
    if not isinstance(name, str):
        raise JobError("the name must be text")
    name = " ".join(name.split())
    if len(name) > MAX_NAME_CHARS:
        raise JobError(f"the name is longer than {MAX_NAME_CHARS} characters")
    return name


def _clean_repeat(repeat: Any, schedule: Schedule) -> Optional[int]:
    if repeat is None or repeat == "":
        return None
    if isinstance(repeat, bool) or not (isinstance(repeat, int) or str(repeat).strip().isdigit()):
        raise JobError(f"repeat must be a whole number of runs, not {repeat!r}")
    n = int(repeat)
    if n < 1:
        raise JobError("repeat must be at least 1 (leave it out to repeat forever)")
    if not schedule.repeats and n > 1:
        raise JobError(f"repeat {n} needs a repeating schedule ('every …' or a cron expression); "
                       f"{schedule.text!r} runs once")
    return n if schedule.repeats else None


def _clean_skills(skills: Any) -> list[str]:
    if skills is None:
        return []
    if isinstance(skills, str):
        skills = [s for s in re.split(r"[,\s]+", skills) if s]
    if not isinstance(skills, (list, tuple)):
        raise JobError("skills must be a list of skill names")
    from tools.skills.format import name_problem

    out: list[str] = []
    for s in skills:
        s = s.strip() if isinstance(s, str) else s
        problem = name_problem(s)
        if problem:
            raise JobError(f"skills: {problem}")
        if s not in out:
            out.append(s)
    return out


def _clean_workdir(workdir: Any, policy: Optional[RunPolicy] = None) -> Optional[str]:
    """An existing directory (resolved), inside the creator's confinement when there is one."""
    if workdir is None or (isinstance(workdir, str) and not workdir.strip()):
        return None
    path = Path(str(workdir)).expanduser()
    if policy is not None and policy.confine_to and not path.is_absolute():
        path = Path(policy.confine_to) / path  # relative, like the file tools: to the confinement
    problem = workdir_problem(str(path), policy)
    if problem:
        raise JobError(problem)
    if not path.is_dir():
        raise JobError(f"workdir {str(path)!r} is not an existing directory")
    return str(path.resolve())


def _clean_deliver(deliver: Any, origin: Optional[dict[str, Any]], cfg: Any,
                   owner: Optional[str] = None) -> str:
    if deliver is None or (isinstance(deliver, str) and not deliver.strip()):
        deliver = "origin" if origin else "local"
    if not isinstance(deliver, str):
        raise JobError(f"deliver must be text: {delivery.TARGET_HELP}")
    try:
        targets = delivery.parse_targets(deliver, origin)
        delivery.check_home_channels(targets, cfg)
    except delivery.DeliveryError as exc:
        raise JobError(str(exc)) from None
    problem = delivery_problem(targets, origin, owner)
    if problem:
        raise JobError(problem)
    return delivery.targets_text(targets)


def _schedule(text: Any, now: float, tz_name: str) -> Schedule:
    if not isinstance(text, str):
        raise JobError("the schedule must be text, e.g. 'every 30m'")
    try:
        return parse_schedule(text, now, get_zone(tz_name))
    except ScheduleError as exc:
        raise JobError(str(exc)) from None


def zone_name(cfg: Any) -> str:
    """The configured ``timezone`` (ConfigError when unknown), else the system's zone."""
    from cron.schedule import local_timezone_name

    from hermes_core.config import ConfigError

    name = getattr(cfg, "timezone", None) or local_timezone_name()
    try:
        get_zone(name)
    except ScheduleError as exc:
        raise ConfigError(f"config.yaml: {exc}") from None
    return name


def create_job(db: Any, *, prompt: Any, schedule: Any, name: Any = None, deliver: Any = None,
               repeat: Any = None, skills: Any = None, workdir: Any = None,
               origin: Optional[dict[str, Any]] = None, cfg: Any = None,
               now: Optional[float] = None, owner: Optional[str] = None,
               policy: Optional[RunPolicy] = None) -> dict[str, Any]:
    """Validate everything, then store the job with its first run computed (UTC), its ``owner``
    and its creator's ``policy`` (None: the owner at the terminal made it)."""
    now = time.time() if now is None else now
    tz_name = zone_name(cfg)
    sched = _schedule(schedule, now, tz_name)
    prompt = _clean_prompt(prompt)
    job = {
        "id": secrets.token_hex(4), "name": _clean_name(name, prompt), "prompt": prompt,
        "schedule": sched.text, "timezone": tz_name,
        "deliver": _clean_deliver(deliver, origin, cfg, owner), "origin": origin or None,
        "skills": _clean_skills(skills), "workdir": _clean_workdir(workdir, policy),
        "repeat": _clean_repeat(repeat, sched), "state": "scheduled",
        "next_run_at": first_run(sched, now, get_zone(tz_name)), "created_at": now,
        "owner": owner, "policy": policy.as_json() if policy is not None else None,
    }
    while db.get_cron_job(job["id"]) is not None:  # 4 random bytes: a clash is rare, not impossible
        job["id"] = secrets.token_hex(4)
    return db.add_cron_job(job)


def list_jobs(db: Any, owner: Optional[str] = None) -> list[dict[str, Any]]:
    """The jobs ``owner`` may see (every job for the owner, None)."""
    return [j for j in db.list_cron_jobs() if visible(j, owner)]


def resolve_job(db: Any, ref: Any, owner: Optional[str] = None) -> dict[str, Any]:
    """An id, or a name that only one job has, among the jobs ``owner`` may see (another chat
    user's job reads exactly like one that does not exist)."""
    ref = str(ref or "").strip()
    if not ref:
        raise JobError("name a job by its id or name; `hermes cron list` shows them")
    job = db.get_cron_job(ref)
    if job is not None and visible(job, owner):
        return job
    matches = [j for j in db.find_cron_jobs(ref) if visible(j, owner)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        listed = ", ".join(f"{j['id']} ({j['schedule']})" for j in matches)
        raise AmbiguousJob(f"the name {ref!r} matches {len(matches)} jobs: {listed}; use the id")
    raise JobNotFound(f"no job with id or name {ref!r}; `hermes cron list` shows them")


def update_job(db: Any, ref: Any, *, cfg: Any = None, now: Optional[float] = None,
               owner: Optional[str] = None, **changes: Any) -> dict[str, Any]:
    """Change any of ``EDITABLE`` of a job ``owner`` may see; a new schedule starts counting from
    now (and re-arms a completed job). A new workdir stays inside the job's recorded policy."""
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise JobError(f"cannot change {', '.join(sorted(unknown))}; "
                       f"editable: {', '.join(EDITABLE)}")
    changes = {k: v for k, v in changes.items() if v is not None}
    if not changes:
        raise JobError(f"nothing to change; give one of {', '.join(EDITABLE)}")
    now = time.time() if now is None else now
    job = resolve_job(db, ref, owner)
    tz_name = job["timezone"]
    fields: dict[str, Any] = {}
    sched = Schedule.from_text(job["schedule"]) if "schedule" not in changes else \
        _schedule(changes["schedule"], now, tz_name)
    if "prompt" in changes:
        fields["prompt"] = _clean_prompt(changes["prompt"])
    if "name" in changes:
        fields["name"] = _clean_name(changes["name"], fields.get("prompt", job["prompt"]))
    if "deliver" in changes:
        fields["deliver"] = _clean_deliver(changes["deliver"], job.get("origin"), cfg, owner)
    if "skills" in changes:
        fields["skills"] = _clean_skills(changes["skills"])
    if "workdir" in changes:
        policy = RunPolicy.from_json(job.get("policy"))
        fields["workdir"] = _clean_workdir(changes["workdir"], policy)
    if changes.get("repeat") in (0, "0"):  # edit: 0 means "forever again"
        fields["repeat"] = None
    elif "repeat" in changes or "schedule" in changes:
        fields["repeat"] = _clean_repeat(changes.get("repeat", job.get("repeat")), sched)
    if "schedule" in changes:
        fields["schedule"] = sched.text
        fields["run_count"] = 0
        if job["state"] != "paused":
            fields["state"] = "scheduled"
            fields["next_run_at"] = first_run(sched, now, get_zone(tz_name))
    elif "repeat" in fields:
        if fields["repeat"] is not None and int(job["run_count"]) >= fields["repeat"]:
            raise JobError(f"the job has already run {job['run_count']} times; "
                           "give a larger repeat")
        if job["state"] == "completed" and sched.repeats:  # more runs allowed: schedule it again
            fields["state"] = "scheduled"
            fields["next_run_at"] = first_run(sched, now, get_zone(tz_name))
    return db.update_cron_job(job["id"], **fields) or job


def pause_job(db: Any, ref: Any, owner: Optional[str] = None) -> dict[str, Any]:
    job = resolve_job(db, ref, owner)
    if job["state"] == "completed":
        raise JobError(f"job {job['id']} has finished; nothing to pause")
    return db.update_cron_job(job["id"], state="paused") or job


def resume_job(db: Any, ref: Any, now: Optional[float] = None,
               owner: Optional[str] = None) -> dict[str, Any]:
    """Occurrences that fell while paused are skipped, not caught up; a one-shot whose time
    passed while paused runs at the next tick."""
    job = resolve_job(db, ref, owner)
    if job["state"] == "scheduled":
        return job
    if job["state"] == "completed":
        raise JobError(f"job {job['id']} has finished; give it a new schedule with "
                       f"`hermes cron edit {job['id']} --schedule ...`")
    now = time.time() if now is None else now
    sched = Schedule.from_text(job["schedule"])
    return db.update_cron_job(job["id"], state="scheduled",
                              next_run_at=first_run(sched, now, get_zone(job["timezone"]))) or job


def remove_job(db: Any, ref: Any, owner: Optional[str] = None) -> dict[str, Any]:
    job = resolve_job(db, ref, owner)
    db.delete_cron_job(job["id"])
    return job
