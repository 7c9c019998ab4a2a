"""Schedules (SPEC §12), pure: what the user typed -> a ``Schedule``; when it fires next; what a
scheduler coming back after a pause must fire and record as missed.

Three kinds: a 5-field cron expression (``0 8 * * *``, via croniter), ``every <n>m|h|d``, and a
one-shot (``in <n>m|h|d`` or an ISO time). A bare ``30m`` means "once" in some Hermes versions and
"every 30 minutes" in others, so it is refused with both spellings suggested. Times are read in the
job's time zone (the configured ``timezone``, default the system's) and computed as UTC epoch
seconds, so hosts in different zones agree on every occurrence.
"""
from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

Kind = Literal["cron", "every", "once"]

UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}
MAX_INTERVAL_SECONDS = 366 * 86400
# missed occurrences recorded one by one (the most recent ones); the rest are counted
MISSED_ROWS = 10
CRON_SCAN_LIMIT = 1000  # occurrences walked one by one before jumping straight to the latest

_UNITS = r"(m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)"
_EVERY = re.compile(rf"^every\s+(\d+)\s*{_UNITS}$", re.I)
_IN = re.compile(rf"^in\s+(\d+)\s*{_UNITS}$", re.I)
_BARE = re.compile(rf"^(\d+)\s*{_UNITS}$", re.I)
_ONCE_PREFIX = re.compile(r"^(once|at)\s+", re.I)
EXAMPLES = ("'every 30m', 'in 2h', a cron expression like '0 8 * * *', "
            "or an ISO time like 2026-12-01T08:00")


class ScheduleError(ValueError):
    """The schedule cannot be used; the message says what to write instead."""


@dataclass(frozen=True)
class Schedule:
    kind: Kind
    text: str  # canonical: "0 8 * * *", "every 30m", "once 2026-12-01T07:00:00Z"
    interval: float = 0.0  # every: seconds between runs
    at: float = 0.0  # once: UTC epoch seconds

    @classmethod
    def from_text(cls, text: str) -> "Schedule":
        """A stored (canonical) schedule; unlike ``parse_schedule`` a past one-shot is fine here."""
        text = " ".join((text or "").split())
        if text.lower().startswith("once "):
            return cls("once", text, at=_parse_iso(text[5:], timezone.utc).timestamp())
        m = _EVERY.match(text)
        if m:
            return cls("every", text,
                       interval=int(m.group(1)) * UNIT_SECONDS[m.group(2)[0].lower()])
        _check_cron(text)
        return cls("cron", text)

    @property
    def repeats(self) -> bool:
        return self.kind != "once"


def _unit(n: str, unit: str) -> tuple[int, str]:
    return int(n), unit[0].lower()


@functools.lru_cache(maxsize=512)
def _cron_valid(expr: str) -> bool:
    from croniter import croniter

    return bool(croniter.is_valid(expr))


def _check_cron(expr: str) -> None:
    fields = expr.split()
    if not fields or not (expr.startswith("@") or any(c.isdigit() or c == "*" for c in fields[0])):
        raise ScheduleError(f"can't read schedule {expr!r}: use {EXAMPLES}")
    if expr.lower() == "@reboot":
        raise ScheduleError("@reboot is not a schedule Hermes can keep; use 'in 1m' or 'every …'")
    if len(fields) != 5 and not (len(fields) == 1 and expr.startswith("@")):
        hint = " (seconds are not supported)" if len(fields) == 6 else ""
        raise ScheduleError(f"can't read schedule {expr!r}{hint}: a cron expression has 5 fields "
                            f"(minute hour day-of-month month day-of-week); or use {EXAMPLES}")
    if not _cron_valid(expr):
        raise ScheduleError(f"{expr!r} is not a valid cron expression "
                            "(minute hour day-of-month month "
                            "day-of-week, e.g. '0 8 * * 1-5' = weekdays at 8:00)")


def _parse_iso(text: str, tz: ZoneInfo | timezone) -> datetime:
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(raw)
    except ValueError:
        raise ScheduleError(f"can't read schedule {text!r}: use {EXAMPLES}") from None
    return dt.replace(tzinfo=tz) if dt.tzinfo is None else dt


def _looks_iso(text: str) -> bool:
    return bool(re.match(r"^\d{4}-\d{2}-\d{2}([ T]|$)", text))


def _interval(n: int, unit: str, text: str) -> int:
    if n <= 0:
        raise ScheduleError(f"{text!r}: the interval must be at least 1 minute (e.g. 'every 1m')")
    seconds = n * UNIT_SECONDS[unit]
    if seconds > MAX_INTERVAL_SECONDS:
        raise ScheduleError(f"{text!r}: intervals longer than 366 days are not supported; "
                            "use a cron expression or an ISO time")
    return seconds


def parse_schedule(text: str, now: float, tz: ZoneInfo) -> Schedule:
    """What a user typed -> a Schedule, or ScheduleError with one clear line."""
    text = " ".join((text or "").split())
    if not text:
        raise ScheduleError(f"the schedule is empty: use {EXAMPLES}")
    m = _EVERY.match(text)
    if m:
        n, unit = _unit(m.group(1), m.group(2))
        _interval(n, unit, text)
        return Schedule("every", f"every {n}{unit}", interval=n * UNIT_SECONDS[unit])
    m = _IN.match(text)
    if m:
        n, unit = _unit(m.group(1), m.group(2))
        return once_at(now + _interval(n, unit, text))
    m = _BARE.match(text)
    if m:
        n, unit = _unit(m.group(1), m.group(2))
        raise ScheduleError(f"{text!r} is ambiguous: "
                            f"write 'every {n}{unit}' to run every {n}{unit}, "
                            f"or 'in {n}{unit}' to run once in {n}{unit}")
    bare = _ONCE_PREFIX.sub("", text)
    if _looks_iso(bare):
        dt = _parse_iso(bare, tz)
        if dt.timestamp() <= now:
            shown = dt.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z")
            raise ScheduleError(f"{shown} is in the past; give a future time (or 'in 30m')")
        return once_at(dt.timestamp())
    _check_cron(text)
    return Schedule("cron", text)


def once_at(ts: float) -> Schedule:
    ts = float(int(ts))  # whole seconds: occurrence keys stay exact in every store
    stamp = datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Schedule("once", f"once {stamp}", at=ts)


def split_schedule(text: str) -> tuple[str, str]:
    """``every 30m check the inbox`` -> (``every 30m``, ``check the inbox``): for one-line commands
    (``/cron add ...``, unquoted CLI words). The longest leading run of words that reads as a
    schedule wins; validation is ``parse_schedule``'s job."""
    words = text.split()
    for n in (5, 3, 2, 1):
        if n <= len(words) and _reads_as_schedule(words[:n]):
            return " ".join(words[:n]), " ".join(words[n:])
    return "", text.strip()


def _reads_as_schedule(words: list[str]) -> bool:
    head = " ".join(words)
    if _EVERY.match(head) or _IN.match(head) or _BARE.match(head):
        return True
    if len(words) == 1 and head.startswith("@"):
        return True
    if len(words) == 5:
        return all(re.match(r"^[\d*/,\-A-Za-z?LW#]+$", f) for f in words) and any(
            c.isdigit() or c == "*" for c in words[0])
    bare = _ONCE_PREFIX.sub("", head)
    if not _looks_iso(bare) or len(bare.split()) > 2:
        return False
    try:
        _parse_iso(bare, timezone.utc)
    except ScheduleError:
        return False
    return True


# -- time zones ------------------------------------------------------------------------------

def local_timezone_name() -> str:
    """The system's IANA zone name (TZ, /etc/localtime, /etc/timezone), else UTC."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    try:
        candidates.append(Path("/etc/timezone").read_text().strip())
    except OSError:
        pass
    for name in candidates:
        if name and _zone(name) is not None:
            return name
    return "UTC"


def _zone(name: str) -> Optional[ZoneInfo]:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def get_zone(name: Optional[str]) -> ZoneInfo:
    """The zone for a configured name (None: the system's); ScheduleError for an unknown name."""
    zone = _zone(name or local_timezone_name())
    if zone is None:
        raise ScheduleError(f"timezone {name!r} is not a known time zone; use an IANA name like "
                            "Europe/Paris or UTC (`hermes config set timezone Europe/Paris`)")
    return zone


# -- occurrences -----------------------------------------------------------------------------

# expression -> croniter: parsing an expression costs more than a step
_iterators: dict[str, Any] = {}
_iterators_lock = threading.Lock()


def _cron_step(expr: str, start: float, tz: ZoneInfo, backwards: bool = False) -> float:
    from croniter import croniter

    when = datetime.fromtimestamp(start, tz)
    with _iterators_lock:
        it = _iterators.get(expr)
        if it is None:
            if len(_iterators) >= 512:
                _iterators.clear()
            it = _iterators[expr] = croniter(expr, when)
        it.set_current(when, force=True)
        return float(it.get_prev(float) if backwards else it.get_next(float))


def _cron_next(expr: str, after: float, tz: ZoneInfo) -> float:
    return _cron_step(expr, after, tz)


def _cron_prev(expr: str, upto: float, tz: ZoneInfo) -> float:
    return _cron_step(expr, upto + 1, tz, backwards=True)


def first_run(schedule: Schedule, now: float, tz: ZoneInfo) -> float:
    """The first occurrence of a new (or resumed, or edited) schedule."""
    if schedule.kind == "once":
        return schedule.at
    if schedule.kind == "every":
        return float(int(now + schedule.interval))
    return _cron_next(schedule.text, now, tz)


@dataclass(frozen=True)
class Due:
    """What one tick does with one due job (see ``plan_due``)."""

    fire_at: float  # the occurrence to run now: the latest one due
    missed: tuple[float, ...]  # older due occurrences recorded as missed (the most recent few)
    missed_total: int  # how many were missed in all
    next_run_at: Optional[float]  # the next occurrence, in the future; None: nothing more


def plan_due(schedule: Schedule, next_run_at: float, now: float, tz: ZoneInfo) -> Due:
    """A job due at ``next_run_at <= now``: fire the latest due occurrence once, count the older
    ones as missed (nothing was running when they came), move the next run past ``now``."""
    if schedule.kind == "once":
        return Due(next_run_at, (), 0, None)
    if schedule.kind == "every":
        step = schedule.interval
        k = int((now - next_run_at) // step)
        fire = next_run_at + k * step
        missed = tuple(fire - i * step for i in range(1, min(k, MISSED_ROWS) + 1))
        return Due(fire, missed, k, fire + step)
    seen = [next_run_at]
    jumped = False
    while True:
        t = _cron_next(schedule.text, seen[-1], tz)
        if t > now:
            break
        seen.append(t)
        if len(seen) > CRON_SCAN_LIMIT:  # down for ages with a frequent job: go straight to the end
            seen.append(_cron_prev(schedule.text, now, tz))
            jumped = True
            t = _cron_next(schedule.text, seen[-1], tz)
            break
    fire = seen[-1]
    earlier = [x for x in seen[:-1] if x < fire]
    total = len(earlier) + (1 if jumped else 0)  # a lower bound when we jumped
    return Due(fire, tuple(reversed(earlier[-MISSED_ROWS:])), total, t)


def format_time(ts: Optional[float], tz: ZoneInfo) -> str:
    """Epoch seconds -> ``2026-12-01 08:00 CET`` in the job's zone ('-' for none)."""
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d %H:%M %Z")


def iso_utc(ts: Optional[float]) -> Optional[str]:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(schedule: Schedule, tz: ZoneInfo) -> str:
    """How a schedule reads in listings."""
    if schedule.kind == "once":
        return "once " + format_time(schedule.at, tz)
    return schedule.text


__all__ = ["Schedule", "ScheduleError", "Due", "parse_schedule", "split_schedule", "first_run",
           "plan_due", "once_at", "get_zone", "local_timezone_name", "format_time", "iso_utc",
           "describe", "MISSED_ROWS"]
