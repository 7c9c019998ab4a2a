"""`hermes cron list|create|edit|pause|resume|run|remove|runs|tick`: scheduled jobs (SPEC §12).

Jobs are named by id or by a name only one job has. `run` and `tick` execute in the foreground
(`tick` is what a system crontab calls on a machine without a gateway: `hermes cron tick -q`).
Plain text on stdout; `--json` for scripts.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from hermes_cli.agent_factory import CommandError, UsageError

_JOB_HELP = "job id, or a name only one job has"


def _job_fields(p: argparse.ArgumentParser, creating: bool) -> None:
    p.add_argument("--schedule", "-s", help="'every 30m', 'in 2h', '0 8 * * *' or an ISO time")
    p.add_argument("--prompt", "-p", help="what the job's agent is asked to do")
    p.add_argument("--name", "-n", help="a short label (ids always work too)")
    p.add_argument("--deliver", "-d", help="local (default here), telegram, telegram:<chat_id>, "
                                           "origin; comma-separated")
    p.add_argument("--repeat", "-r", type=int, metavar="N",
                   help="stop after N runs" + ("" if creating else " (0: run forever)"))
    p.add_argument("--skill", action="append", metavar="NAME", dest="skills",
                   help="attach a skill to every run (repeat for several)")
    p.add_argument("--workdir", metavar="DIR", help="working directory of the runs")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("cron", help="scheduled jobs: list, create, edit, pause, resume, run, "
                                    "remove, runs, tick")
    p.set_defaults(func=_with_store(_list))  # bare `hermes cron` lists
    cs = p.add_subparsers(dest="cron_action", metavar="ACTION")
    ls = cs.add_parser("list", help="every job with its next run")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_with_store(_list))
    cr = cs.add_parser("create", help="schedule a prompt: hermes cron create 'every 1h' 'check x'")
    cr.add_argument("words", nargs="*", metavar="SCHEDULE PROMPT",
                    help="the schedule, then the prompt (or use --schedule/--prompt)")
    _job_fields(cr, creating=True)
    cr.add_argument("--json", action="store_true")
    cr.set_defaults(func=_with_store(_create))
    ed = cs.add_parser("edit", help="change a job's schedule, prompt, name, delivery, …")
    ed.add_argument("job", help=_JOB_HELP)
    _job_fields(ed, creating=False)
    ed.set_defaults(func=_with_store(_edit))
    for action, text in (("pause", "stop running a job (keeps it)"),
                         ("resume", "start a paused job again"),
                         ("remove", "delete a job and its run history"),
                         ("run", "run a job now, in the foreground, and print its answer")):
        a = cs.add_parser(action, help=text, aliases=["rm"] if action == "remove" else [])
        a.add_argument("job", help=_JOB_HELP)
        if action == "remove":
            a.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        a.set_defaults(func=_with_store(_ACTIONS[action]))
    rn = cs.add_parser("runs", help="recent runs (of one job, or all)")
    rn.add_argument("job", nargs="?", help=_JOB_HELP)
    rn.add_argument("--limit", type=int, default=20)
    rn.add_argument("--json", action="store_true")
    rn.set_defaults(func=_with_store(_runs))
    tk = cs.add_parser("tick", help="run the jobs that are due, once (for a system crontab)")
    tk.add_argument("-q", "--quiet", action="store_true", help="print nothing when nothing is due")
    tk.set_defaults(func=_with_store(_tick))


def _with_store(action: Callable[[argparse.Namespace, Any, Any], int]
                ) -> Callable[[argparse.Namespace], int]:
    """A ``hermes cron`` action as an argparse handler: the config and the store ready around
    it, a job error as one line."""
    def handler(args: argparse.Namespace) -> int:
        from hermes_core.config import load_config
        from cron.jobs import JobError
        from hermes_cli.agent_factory import open_db

        cfg = load_config()
        with open_db() as db:
            try:
                return action(args, db, cfg)
            except JobError as exc:
                raise CommandError(str(exc)) from None
    return handler


# -- actions ---------------------------------------------------------------------------------

def _list(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.views import job_lines, job_view

    jobs = db.list_cron_jobs()
    if getattr(args, "json", False):  # bare `hermes cron` lists too
        print(json.dumps([job_view(j) for j in jobs], indent=1, ensure_ascii=False))
        return 0
    for line in job_lines(jobs):
        print(line)
    return 0


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    return {"name": args.name, "deliver": args.deliver, "repeat": args.repeat,
            "skills": args.skills, "workdir": args.workdir}


def _create(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.jobs import create_job
    from cron.schedule import split_schedule
    from cron.views import describe_job, job_view

    schedule, prompt = args.schedule, args.prompt
    words = list(args.words or [])
    if schedule is None and words:
        head, rest = split_schedule(words[0])
        if head and not rest and len(words) > 1:  # quoted: 'every 30m' 'the prompt'
            schedule, words = head, words[1:]
        else:
            schedule, rest = split_schedule(" ".join(words))
            words = [rest] if rest else []
    if prompt is None:
        prompt = " ".join(words)
    elif words:
        raise UsageError("give the prompt once: as words or with --prompt, not both")
    if not schedule:
        raise UsageError("no schedule before the prompt: hermes cron create 'every 1h' "
                         "'what to do' (or --schedule/--prompt)")
    if not prompt.strip():
        raise UsageError(f"no prompt after the schedule {schedule!r}: hermes cron create "
                         f"{schedule!r} 'what to do'")
    job = create_job(db, prompt=prompt, schedule=schedule, cfg=cfg, **_fields(args))
    if args.json:
        print(json.dumps(job_view(job), indent=1, ensure_ascii=False))
    else:
        print("Created " + describe_job(job) + ".")
    return 0


def _edit(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.jobs import update_job
    from cron.views import describe_job

    changes = dict(_fields(args), schedule=args.schedule, prompt=args.prompt)
    job = update_job(db, args.job, cfg=cfg, **changes)
    print("Updated " + describe_job(job) + ".")
    return 0


def _pause(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.jobs import pause_job

    job = pause_job(db, args.job)
    print(f"Paused job {job['id']} ({job.get('name')}); "
          f"`hermes cron resume {job['id']}` restarts it.")
    return 0


def _resume(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.jobs import resume_job
    from cron.views import describe_job

    print("Resumed " + describe_job(resume_job(db, args.job)) + ".")
    return 0


def _remove(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.jobs import remove_job, resolve_job
    from cron.views import describe_job
    from hermes_cli.confirm import go_ahead

    job = resolve_job(db, args.job)
    question = f"Remove {describe_job(job)}, with its run history?"
    if not go_ahead(args.yes, f"not removing job {job['id']}", question, sys.stdout):
        return 0
    job = remove_job(db, job["id"])
    print(f"Removed job {job['id']} ({job.get('name')}) and its run history.")
    return 0


def _run_now(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.jobs import resolve_job
    from cron.scheduler import run_once

    job = resolve_job(db, args.job)
    print(f"Running job {job['id']} ({job.get('name')}) now…", file=sys.stderr, flush=True)
    outcome = run_once(db, cfg, job)
    if outcome.answer is not None:
        print(outcome.answer)
    _report(outcome)
    return 0 if outcome.status in ("ok", "silent") else 1


def _report(outcome: Any) -> None:
    where = f"output {outcome.output_path}" if outcome.output_path else "no output file"
    if outcome.error:
        print(f"hermes: error: {outcome.status}: {outcome.error} ({where})", file=sys.stderr)
        return
    delivered = f"; delivery: {outcome.delivery}" if outcome.delivery else ""
    print(f"status {outcome.status}; {where}{delivered}", file=sys.stderr)


def _runs(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.jobs import resolve_job
    from cron.views import run_lines, run_view

    job_id = resolve_job(db, args.job)["id"] if args.job else None
    runs = db.list_cron_runs(job_id, limit=max(1, args.limit))
    if args.json:
        print(json.dumps([run_view(r) for r in runs], indent=1, ensure_ascii=False))
        return 0
    for line in run_lines(runs):
        print(line)
    return 0


def _tick(args: argparse.Namespace, db: Any, cfg: Any) -> int:
    from cron.scheduler import Scheduler

    sched = Scheduler(db, cfg)
    futures = sched.tick()
    if sched.last_error:
        raise CommandError(f"the tick failed: {sched.last_error}")
    if not futures:
        if not args.quiet:
            print("No jobs due.")
        return 0
    for run, _fut in futures:
        print(f"Running job {run['id']} ({run.get('name')})…", file=sys.stderr, flush=True)
    sched.wait()
    sched.shutdown()
    failed = 0
    for run, fut in futures:
        outcome = fut.result()
        failed += outcome.status not in ("ok", "silent")
        print(f"job {run['id']} ({run.get('name')}): {outcome.status}"
              + (f" — {outcome.error}" if outcome.error else "")
              + (f" — {outcome.output_path}" if outcome.output_path else ""))
    return 1 if failed else 0


_ACTIONS = {"pause": _pause, "resume": _resume, "remove": _remove, "run": _run_now}
