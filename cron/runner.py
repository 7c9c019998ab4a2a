"""One run of a job (SPEC §12): a fresh agent built through the facade, like any surface.

The agent runs on platform ``cron`` with its session stored (``source=cron``), without memory,
``cronjob`` or ``delegate_task``, and nobody to approve a dangerous command (so it is denied). Its
prompt starts with a short note: the answer is delivered automatically, and ``[SILENT]`` sends
nothing. The answer (or the failure) is written to ``HERMES_HOME/cron/output/<job_id>/<time>.md``,
then delivered. A run past its timeout is interrupted and recorded as ``timeout``.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from hermes_core.files import atomic_write
from cron import delivery
from cron.schedule import ScheduleError, format_time, get_zone

log = logging.getLogger("hermes.cron")

# a run never schedules jobs or delegates (memory: off on "cron")
NO_TOOLSETS = ("cronjob", "delegation")
INTERRUPT_GRACE = 15.0  # seconds an interrupted agent gets to stop before the run is recorded


@dataclass
class RunOutcome:
    status: str  # ok | silent | failed | timeout | interrupted
    answer: Optional[str] = None
    error: Optional[str] = None
    output_path: Optional[str] = None
    delivery: Optional[str] = None


def run_note(job: dict[str, Any]) -> str:
    where = ("" if job.get("deliver") == "local"
             else f" to {job.get('deliver')}")
    return (f"[Scheduled job {job.get('name')!r} ({job['id']}): nobody is watching this run. Your "
            f"final answer is delivered automatically{where}; do not try to send it yourself. If "
            f"there is nothing worth reporting, reply exactly {delivery.SILENT} and nothing "
            "is sent.]")


def build_prompt(job: dict[str, Any], home: Path, cfg: Any = None) -> str:
    """Note + attached skills (found like ``/<skill>`` finds them) + the job's prompt; a skill
    that is not installed raises ``LookupError``."""
    parts = [run_note(job)]
    if job.get("skills"):
        from tools.skills import invoke, loader
        from tools.skills.bundled import catalog

        skills = catalog(home, cfg)
        for name in job["skills"]:
            skill = invoke.find(skills, name)
            if skill is None:
                raise LookupError(f"skill {name!r} is not installed (`hermes skills list` shows "
                                  f"them); install it, or drop it with `hermes cron edit "
                                  f"{job['id']} --skill ...`")
            text = loader.read_text(skill.skill_md).strip()
            parts.append(f"[Skill {skill.name}]\n{text}\n[End of skill {skill.name}]")
    parts.append(str(job.get("prompt") or ""))
    return "\n\n".join(parts)


def run_policy(run: dict[str, Any], cfg: Any) -> Optional[Any]:
    """The limits the job's creator had (``cron.policy``). A job from before policies were
    recorded that came from a chat gets the gateway's limits, never the owner's."""
    from cron.policy import RunPolicy

    policy = RunPolicy.from_json(run.get("policy"))
    if policy is None and (run.get("origin") or {}).get("platform") in delivery.known_platforms():
        from agent.tool_policy import run_policy as gateway_policy

        policy = gateway_policy(cfg)
    return policy


def make_agent(run: dict[str, Any], cfg: Any, db: Any) -> Any:
    """A fresh agent for one run, in the run's pre-chosen session, under its creator's policy;
    ValueError when its working directory left the creator's confinement."""
    from agent.factory import AgentSpec, ProviderChoice, build_agent
    from cron.policy import run_limits
    from hermes_core.provider_settings import resolve_provider
    from tools.registry import toolset_names

    limits = run_limits(run_policy(run, cfg), run.get("workdir") or None, toolset_names(),
                        NO_TOOLSETS)
    return build_agent(AgentSpec(
        config=cfg, platform="cron", provider=ProviderChoice.of(resolve_provider(cfg)),
        session_db=db, session_id=run.get("session_id"), skip_memory=True,
        max_iterations=cfg.agent.max_turns,
        owner=run.get("owner"),  # its session is the job owner's (their session_search finds it)
        **limits))


def _converse(agent: Any, prompt: str, timeout: float,
              cancel: Optional[threading.Event]
              ) -> tuple[str, Optional[dict[str, Any]], Optional[str]]:
    """Run the turn in a thread; returns (status, result, error). Past ``timeout`` (or when
    ``cancel`` is set) the agent is interrupted and gets a short grace to stop."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = agent.run_conversation(prompt)
        except BaseException as exc:  # noqa: BLE001 - recorded on the run
            box["error"] = exc

    thread = threading.Thread(target=work, name="cron-run", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(min(0.5, max(0.0, deadline - time.monotonic())))
        if cancel is not None and cancel.is_set():
            break
    if thread.is_alive():
        stopped_by = "cancel" if cancel is not None and cancel.is_set() else "timeout"
        agent.interrupt(f"cron run {stopped_by}")
        thread.join(INTERRUPT_GRACE)
        if stopped_by == "cancel":
            return "interrupted", None, "the gateway shut down during the run; it was interrupted"
        return "timeout", None, (f"the run took longer than its {timeout:g} s timeout and was "
                                 "stopped (cron.run_timeout in config.yaml)")
    if "error" in box:
        exc = box["error"]
        return "failed", None, f"{type(exc).__name__}: {exc}"
    return "ok", box.get("result"), None


def _judge(result: Optional[dict[str, Any]]) -> tuple[str, Optional[str], Optional[str]]:
    """An agent result -> (status, answer, error)."""
    result = result or {}
    answer = result.get("final_response")
    if (result.get("failed") or result.get("compression_exhausted")
            or result.get("compression_deferred")):
        return "failed", None, str(result.get("error") or answer or "the turn failed")
    if result.get("interrupted"):
        return "interrupted", None, "the run was interrupted"
    if not isinstance(answer, str) or not answer.strip():
        return "failed", None, (f"no answer (stopped after {result.get('api_calls', '?')} model "
                                "calls)")
    if delivery.is_silent(answer):
        return "silent", answer, None
    return "ok", answer, None


def output_path(home: Path, run: dict[str, Any]) -> Path:
    stamp = datetime.fromtimestamp(float(run["scheduled_at"]),
                                   timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = home / "cron" / "output" / str(run["id"])
    path = folder / f"{stamp}.md"
    return path if not path.exists() else folder / f"{stamp}-{run['run_id']}.md"


def write_output(path: Path, run: dict[str, Any], outcome: RunOutcome) -> None:
    try:
        zone = get_zone(run.get("timezone"))
        when = format_time(float(run["scheduled_at"]), zone)
    except ScheduleError:
        when = str(run["scheduled_at"])
    lines = [f"# {run.get('name') or run['id']}", "",
             f"- job: `{run['id']}` ({run.get('schedule')})",
             f"- scheduled: {when} ({run.get('trigger')})",
             f"- status: {outcome.status}", f"- session: `{run.get('session_id')}`", ""]
    lines.append(outcome.answer if outcome.answer is not None else f"**Failed:** {outcome.error}")
    atomic_write(path, "\n".join(lines).rstrip() + "\n")


def execute(run: dict[str, Any], *, db: Any, cfg: Any, sender: delivery.Sender, home: Path,
            timeout: float, cancel: Optional[threading.Event] = None) -> RunOutcome:
    """Run one claimed occurrence (``run`` = the job's columns + run_id, scheduled_at, session_id)
    to its end: agent, output file, delivery, and the outcome recorded in the store. Never
    raises."""
    try:
        outcome = _run_agent(run, db=db, cfg=cfg, home=home, timeout=timeout, cancel=cancel)
    except Exception as exc:  # noqa: BLE001 - a broken run is recorded, the scheduler goes on
        log.exception("cron run %s of job %s crashed", run.get("run_id"), run.get("id"))
        outcome = RunOutcome("failed", error=f"{type(exc).__name__}: {exc}")
    if outcome.error:
        from hermes_core.redact import redact, secret_values

        outcome.error = redact(outcome.error, secret_values())
    path = output_path(home, run)
    try:
        write_output(path, run, outcome)
        outcome.output_path = str(path)
    except OSError as exc:
        log.warning("cron: could not write %s: %s", path, exc)
    outcome.delivery = _deliver(run, outcome, db, cfg, sender)
    try:
        db.finish_cron_run(run["run_id"], outcome.status, error=outcome.error,
                           output_path=outcome.output_path, delivery=outcome.delivery)
    except Exception:  # noqa: BLE001 - the store is down: the log is all we have
        log.exception("cron: could not record the outcome of run %s", run.get("run_id"))
    log.info("cron job %s run %s: %s%s", run.get("id"), run.get("run_id"), outcome.status,
             f" ({outcome.error})" if outcome.error else "")
    return outcome


def _run_agent(run: dict[str, Any], *, db: Any, cfg: Any, home: Path, timeout: float,
               cancel: Optional[threading.Event]) -> RunOutcome:
    try:
        prompt = build_prompt(run, home, cfg)
    except (LookupError, OSError, ValueError) as exc:  # ValueError: a SKILL.md that is not UTF-8
        return RunOutcome("failed", error=str(exc))
    try:
        agent = make_agent(run, cfg, db)
    except ValueError as exc:  # e.g. the workdir now leads outside the creator's confinement
        return RunOutcome("failed", error=str(exc))
    try:
        status, result, error = _converse(agent, prompt, timeout, cancel)
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            close()
    if status != "ok":
        return RunOutcome(status, error=error)
    status, answer, error = _judge(result)
    return RunOutcome(status, answer=answer, error=error)


def _deliver(run: dict[str, Any], outcome: RunOutcome, db: Any, cfg: Any,
             sender: delivery.Sender) -> Optional[str]:
    try:
        targets = delivery.parse_targets(run.get("deliver") or "local", run.get("origin"))
    except delivery.DeliveryError as exc:
        return f"failed: {exc}"
    if all(t.kind == "local" for t in targets) or outcome.status == "silent":
        return None
    name = str(run.get("name") or run["id"])
    if outcome.status == "ok":
        text = delivery.answer_message(name, outcome.answer or "")
    elif db.claim_cron_failure_notice(run["id"], outcome.error or outcome.status):
        text = delivery.failure_message(name, outcome.error or outcome.status)
    else:
        return "not sent: same failure as the last one"
    return delivery.deliver(targets, run.get("origin"), text, sender, cfg)
