"""Scheduled jobs and their runs (SPEC §12).

Schedule arithmetic lives in ``cron.schedule``: ``claim_due_cron_runs`` is handed a ``plan``
function and only makes its result atomic. The claim is the INSERT of the UNIQUE
(job_id, scheduled_at) run row with ``ON CONFLICT DO NOTHING``: on PostgreSQL that holds across
hosts (a concurrent claimer waits on the key, then yields), and the job row is read
``FOR UPDATE`` so the loser sees the moved schedule. Run statuses: running, ok, silent, failed,
timeout, interrupted, missed, unknown (the claimer died; never re-fired).
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional

from .common import dicts, logger, new_session_id


class CronMixin:
    """Needs ``_write``, ``_read`` and ``_b`` from ``SessionDB``."""

    CRON_JOB_COLUMNS = ("name", "prompt", "schedule", "timezone", "deliver", "origin", "skills",
                        "workdir", "repeat", "run_count", "state", "next_run_at", "last_run_at",
                        "last_status", "last_failure", "owner", "policy")
    _CRON_JSON = ("origin", "skills", "policy")

    @classmethod
    def _cron_row(cls, row: Optional[Any]) -> Optional[dict[str, Any]]:
        if row is None:
            return None
        d = dict(row)
        for key in cls._CRON_JSON:
            if key in d:
                try:
                    d[key] = json.loads(d[key]) if d[key] else None
                except ValueError:
                    logger.warning("cron job %s: unreadable %s column ignored", d.get("id"), key)
                    d[key] = None
        return d

    @classmethod
    def _cron_values(cls, fields: dict[str, Any]) -> dict[str, Any]:
        unknown = set(fields) - set(cls.CRON_JOB_COLUMNS) - {"id", "created_at"}
        if unknown:
            raise ValueError(f"unknown cron job field(s): {', '.join(sorted(unknown))}")
        return {k: (json.dumps(v) if k in cls._CRON_JSON and v is not None else v)
                for k, v in fields.items()}

    def add_cron_job(self, job: dict[str, Any]) -> dict[str, Any]:
        """Insert a job (``id``, ``prompt``, ``schedule``, ``timezone`` and ``next_run_at`` at
        least); ``origin`` and ``skills`` are JSON-encoded here. Returns the stored row."""
        values = self._cron_values(dict(job, created_at=job.get("created_at") or time.time()))
        cols = ", ".join(values)

        def tx(c: Any) -> None:
            c.execute(f"INSERT INTO cron_jobs ({cols}, updated_at) "
                      f"VALUES ({', '.join('?' * len(values))}, ?)",
                      (*values.values(), values["created_at"]))
        self._write(tx)
        return self.get_cron_job(job["id"]) or {}

    def get_cron_job(self, job_id: str) -> Optional[dict[str, Any]]:
        rows = self._read("SELECT * FROM cron_jobs WHERE id = ?", (job_id,))
        return self._cron_row(rows[0]) if rows else None

    def find_cron_jobs(self, name: str) -> list[dict[str, Any]]:
        """Jobs whose name is ``name`` (case-insensitive); names are not unique."""
        rows = self._read("SELECT * FROM cron_jobs WHERE lower(name) = lower(?) ORDER BY created_at",
                          (name,))
        return [self._cron_row(r) for r in rows]  # type: ignore[misc]

    def list_cron_jobs(self) -> list[dict[str, Any]]:
        """Every job, oldest first."""
        return [self._cron_row(r) for r in  # type: ignore[misc]
                self._read("SELECT * FROM cron_jobs ORDER BY created_at, id")]

    def update_cron_job(self, job_id: str, **fields: Any) -> Optional[dict[str, Any]]:
        """Set the given columns (see ``CRON_JOB_COLUMNS``); None when the job does not exist."""
        values = self._cron_values(fields)
        if values:
            sets = ", ".join(f"{k} = ?" for k in values)
            changed = self._write(lambda c: c.execute(
                f"UPDATE cron_jobs SET {sets}, updated_at = ? WHERE id = ?",
                (*values.values(), time.time(), job_id)).rowcount)
            if not changed:
                return None
        return self.get_cron_job(job_id)

    def delete_cron_job(self, job_id: str) -> bool:
        """Remove a job and its run history (output files stay on disk)."""
        def tx(c: Any) -> bool:
            c.execute("DELETE FROM cron_runs WHERE job_id = ?", (job_id,))
            return c.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,)).rowcount > 0
        return self._write(tx)

    def next_cron_job(self) -> Optional[dict[str, Any]]:
        """The scheduled job that comes due first."""
        rows = self._read("SELECT * FROM cron_jobs WHERE state = 'scheduled' AND next_run_at IS NOT NULL"
                          " ORDER BY next_run_at LIMIT 1")
        return self._cron_row(rows[0]) if rows else None

    def claim_due_cron_runs(self, now: float, holder: str,
                            plan: Callable[[dict[str, Any], float], dict[str, Any]],
                            limit: int = 1000) -> list[dict[str, Any]]:
        """Claim every due occurrence for ``holder``, in one transaction; returns the claimed runs
        (the job's columns plus ``run_id``, ``scheduled_at``, ``session_id``, ``trigger``).

        ``plan(job, now)`` -> ``{fire_at, missed: [...], note, next_run_at}`` or ``{error}``. The
        claim is the INSERT of the (job_id, scheduled_at) row: a conflict means someone else ran
        that occurrence. Missed occurrences get ``missed`` rows; the job's next run, run count and
        state (``completed`` after a one-shot or ``repeat`` runs) move in the same transaction.
        """
        def tx(c: Any) -> list[dict[str, Any]]:
            jobs = dicts(c.execute("SELECT * FROM cron_jobs WHERE state = 'scheduled' AND "
                                   "next_run_at <= ? ORDER BY next_run_at, id LIMIT ?"
                                   + self._b.FOR_UPDATE, (now, int(limit))))
            return [run for row in jobs
                    if (run := self._claim_one(c, self._cron_row(row) or {}, now, holder, plan))]
        return self._write(tx)

    def _claim_one(self, c: Any, job: dict[str, Any], now: float, holder: str,
                   plan: Callable[[dict[str, Any], float], dict[str, Any]]) -> Optional[dict[str, Any]]:
        due = plan(job, now)
        ins = ("INSERT INTO cron_runs (job_id, scheduled_at, trigger, status, claimed_by, started_at,"
               " heartbeat_at, finished_at, session_id, error, note) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
               " ON CONFLICT (job_id, scheduled_at) DO NOTHING")
        if due.get("error"):  # the job cannot be planned (e.g. a corrupt schedule): park it, say why
            c.execute(ins, (job["id"], job["next_run_at"], "schedule", "failed", holder, now, None,
                            now, None, due["error"], None))
            c.execute("UPDATE cron_jobs SET state = 'paused', last_status = 'failed', updated_at = ?"
                      " WHERE id = ?", (now, job["id"]))
            return None
        for missed in due.get("missed") or ():
            c.execute(ins, (job["id"], missed, "schedule", "missed", None, None, None, now, None,
                            None, "no scheduler was running at this time"))
        sid = new_session_id()
        won_row = c.execute(ins + " RETURNING id", (job["id"], due["fire_at"], "schedule", "running",
                                                     holder, now, now, None, sid, None,
                                                     due.get("note"))).fetchone()
        won = won_row is not None
        count = int(job.get("run_count") or 0) + won
        nxt = due.get("next_run_at")
        done = nxt is None or (job.get("repeat") is not None and count >= int(job["repeat"]))
        c.execute("UPDATE cron_jobs SET next_run_at = ?, state = ?, run_count = ?, updated_at = ?"
                  " WHERE id = ? AND state = 'scheduled' AND next_run_at = ?",
                  (None if done else nxt, "completed" if done else "scheduled", count, now,
                   job["id"], job["next_run_at"]))
        if not won:
            return None
        return dict(job, run_id=int(won_row[0]), scheduled_at=due["fire_at"], session_id=sid,
                    trigger="schedule", run_count=count)

    def claim_manual_cron_run(self, job_id: str, now: float, holder: str) -> Optional[dict[str, Any]]:
        """A run requested by hand (``run``), keyed at ``now``; it neither moves the schedule nor
        counts toward ``repeat``. None when the job does not exist."""
        def tx(c: Any) -> Optional[dict[str, Any]]:
            found = dicts(c.execute("SELECT * FROM cron_jobs WHERE id = ?" + self._b.FOR_UPDATE,
                                    (job_id,)))
            if not found:
                return None
            row = found[0]
            sid, at = new_session_id(), float(now)
            while c.execute("SELECT 1 FROM cron_runs WHERE job_id = ? AND scheduled_at = ?",
                            (job_id, at)).fetchone():
                at += 0.001
            run_id = c.execute("INSERT INTO cron_runs (job_id, scheduled_at, trigger, status,"
                               " claimed_by, started_at, heartbeat_at, session_id)"
                               " VALUES (?,?,?,?,?,?,?,?) RETURNING id",
                               (job_id, at, "manual", "running", holder, now, now, sid)).fetchone()[0]
            return dict(self._cron_row(row) or {}, run_id=int(run_id), scheduled_at=at,
                        session_id=sid, trigger="manual")
        return self._write(tx)

    def finish_cron_run(self, run_id: int, status: str, *, error: Optional[str] = None,
                        output_path: Optional[str] = None, delivery: Optional[str] = None,
                        now: Optional[float] = None) -> bool:
        """Record a run's outcome and the job's last status. A run already marked ``unknown`` (its
        claimer looked dead) still gets its real outcome. A success clears the failure notice."""
        now = time.time() if now is None else now

        def tx(c: Any) -> bool:
            row = c.execute("SELECT job_id FROM cron_runs WHERE id = ? AND status IN "
                            "('running', 'unknown')", (run_id,)).fetchone()
            if row is None:
                return False
            c.execute("UPDATE cron_runs SET status = ?, finished_at = ?, error = ?, output_path = ?,"
                      " delivery = ? WHERE id = ?", (status, now, error, output_path, delivery, run_id))
            clear = ", last_failure = NULL" if status in ("ok", "silent") else ""
            c.execute(f"UPDATE cron_jobs SET last_status = ?, last_run_at = ?{clear} WHERE id = ?",
                      (status, now, row[0]))
            return True
        return self._write(tx)

    def claim_cron_failure_notice(self, job_id: str, error: str) -> bool:
        """True once per distinct failure text in a row (atomic across processes): only then is
        the failure sent to the job's targets."""
        return self._write(lambda c: c.execute(
            "UPDATE cron_jobs SET last_failure = ? WHERE id = ? AND "
            "(last_failure IS NULL OR last_failure <> ?)", (error, job_id, error)).rowcount > 0)

    def heartbeat_cron_runs(self, holder: str, now: Optional[float] = None) -> int:
        """Refresh ``heartbeat_at`` of the holder's running runs (how other hosts tell it lives)."""
        return self._write(lambda c: c.execute(
            "UPDATE cron_runs SET heartbeat_at = ? WHERE claimed_by = ? AND status = 'running'",
            (time.time() if now is None else now, holder)).rowcount)

    def running_cron_runs(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read("SELECT * FROM cron_runs WHERE status = 'running'")]

    def mark_cron_runs_unknown(self, run_ids: list[int], note: str) -> int:
        """Runs whose claimer died: ``unknown``, finished, never re-fired (the row keeps the key)."""
        if not run_ids:
            return 0
        marks = ",".join("?" * len(run_ids))
        return self._write(lambda c: c.execute(
            f"UPDATE cron_runs SET status = 'unknown', finished_at = ?, note = ? "
            f"WHERE status = 'running' AND id IN ({marks})", (time.time(), note, *run_ids)).rowcount)

    def get_cron_run(self, run_id: int) -> Optional[dict[str, Any]]:
        rows = self._read("SELECT * FROM cron_runs WHERE id = ?", (run_id,))
        return dict(rows[0]) if rows else None

    def list_cron_runs(self, job_id: Optional[str] = None, limit: int = 20) -> list[dict[str, Any]]:
        """Newest occurrence first."""
        where, params = ("WHERE job_id = ?", [job_id]) if job_id else ("", [])
        return [dict(r) for r in self._read(
            f"SELECT * FROM cron_runs {where} ORDER BY scheduled_at DESC, id DESC LIMIT ?",
            [*params, int(limit)])]
