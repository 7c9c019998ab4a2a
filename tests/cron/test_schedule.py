"""Schedules, pure: parsing and its refusals, time zones stored as UTC, next and missed occurrences."""
from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from cron.schedule import (MISSED_ROWS, Schedule, ScheduleError, first_run, get_zone, parse_schedule,
                           plan_due, split_schedule)

PARIS = ZoneInfo("Europe/Paris")
UTC = ZoneInfo("UTC")
NOW = datetime(2026, 6, 15, 10, 0, 30, tzinfo=UTC).timestamp()  # a Monday, 12:00:30 in Paris


def ts(*args: int, tz: ZoneInfo = UTC) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


@pytest.mark.parametrize("text, kind, canonical", [
    ("every 30m", "every", "every 30m"),
    ("every  2 hours", "every", "every 2h"),
    ("EVERY 1d", "every", "every 1d"),
    ("0 8 * * 1-5", "cron", "0 8 * * 1-5"),
    ("*/15  *  * * *", "cron", "*/15 * * * *"),
    ("@daily", "cron", "@daily"),
    ("in 45m", "once", "once 2026-06-15T10:45:30Z"),
    ("in 1 hour", "once", "once 2026-06-15T11:00:30Z"),
    ("2026-06-15T14:00", "once", "once 2026-06-15T12:00:00Z"),  # naive: the job's zone (Paris, UTC+2)
    ("2026-06-15 14:00+00:00", "once", "once 2026-06-15T14:00:00Z"),
    ("2026-06-16T00:00:00Z", "once", "once 2026-06-16T00:00:00Z"),
])
def test_parse(text, kind, canonical):
    s = parse_schedule(text, NOW, PARIS)
    assert (s.kind, s.text) == (kind, canonical)
    assert Schedule.from_text(s.text) == s  # what is stored reads back the same


@pytest.mark.parametrize("text, words", [
    ("30m", ["ambiguous", "'every 30m'", "'in 30m'"]),
    ("2 h", ["ambiguous", "'every 2h'", "'in 2h'"]),
    ("every 0m", ["at least 1 minute"]),
    ("in 0d", ["at least 1 minute"]),
    ("every 400d", ["366 days"]),
    ("0 8 * * * *", ["5 fields", "seconds"]),
    ("0 8 * *", ["5 fields"]),
    ("61 * * * *", ["not a valid cron expression"]),
    ("2026-06-15T11:59", ["in the past", "2026-06-15 11:59 CEST"]),
    ("2026-13-45T10:00", ["can't read", "ISO time"]),
    ("tomorrow at noon", ["can't read", "every 30m"]),
    ("", ["empty"]),
    ("@reboot", ["@reboot"]),
])
def test_refusals_say_what_to_write(text, words):
    with pytest.raises(ScheduleError) as err:
        parse_schedule(text, NOW, PARIS)
    for w in words:
        assert w in str(err.value)


def test_time_zone_decides_the_utc_instant():
    s = parse_schedule("0 8 * * *", NOW, PARIS)
    assert first_run(s, NOW, PARIS) == ts(2026, 6, 16, 8, 0, tz=PARIS) == ts(2026, 6, 16, 6, 0)
    assert first_run(s, NOW, ZoneInfo("Asia/Tokyo")) == ts(2026, 6, 15, 23, 0)
    # across the spring DST change a wall-clock time keeps its local hour
    before = ts(2026, 3, 28, 12, 0, tz=PARIS)
    assert first_run(s, before, PARIS) == ts(2026, 3, 29, 8, 0, tz=PARIS) == ts(2026, 3, 29, 6, 0)
    assert first_run(s, ts(2026, 3, 27, 12, 0, tz=PARIS), PARIS) == ts(2026, 3, 28, 7, 0)


def test_first_runs_of_each_kind():
    assert first_run(parse_schedule("every 30m", NOW, PARIS), NOW, PARIS) == int(NOW) + 1800
    once = parse_schedule("in 5m", NOW, PARIS)
    assert first_run(once, NOW, PARIS) == once.at == int(NOW) + 300


def test_plan_every_fires_the_latest_and_counts_the_missed():
    s = parse_schedule("every 10m", NOW, PARIS)
    nxt = NOW - 3600 - 5  # due for an hour: 7 occurrences fell
    due = plan_due(s, nxt, NOW, PARIS)
    assert due.fire_at == nxt + 6 * 600 <= NOW
    assert due.missed_total == 6 and due.missed == tuple(nxt + k * 600 for k in (5, 4, 3, 2, 1, 0))
    assert due.next_run_at == due.fire_at + 600 > NOW
    on_time = plan_due(s, NOW - 1, NOW, PARIS)
    assert (on_time.fire_at, on_time.missed_total, on_time.missed) == (NOW - 1, 0, ())


def test_plan_cron_after_a_long_outage_records_only_the_recent_misses():
    s = parse_schedule("0 * * * *", NOW, PARIS)
    first = ts(2026, 6, 14, 10, 0)  # a day of hourly occurrences went by
    due = plan_due(s, first, NOW, PARIS)
    assert due.fire_at == ts(2026, 6, 15, 10, 0)
    assert due.missed_total == 24 and len(due.missed) == MISSED_ROWS
    assert due.missed[0] == ts(2026, 6, 15, 9, 0)
    assert due.next_run_at == ts(2026, 6, 15, 11, 0)


def test_plan_cron_outage_beyond_the_scan_limit_jumps_to_the_latest():
    s = parse_schedule("* * * * *", NOW, PARIS)
    due = plan_due(s, NOW - 5 * 86400, NOW, PARIS)  # 7,200 minutes
    assert due.fire_at == ts(2026, 6, 15, 10, 0) and due.next_run_at == ts(2026, 6, 15, 10, 1)
    assert due.missed_total > 1000 and len(due.missed) == MISSED_ROWS


def test_plan_once_fires_even_when_late_and_ends():
    s = parse_schedule("in 5m", NOW - 86400, PARIS)
    due = plan_due(s, s.at, NOW, PARIS)
    assert (due.fire_at, due.missed, due.next_run_at) == (s.at, (), None)


@pytest.mark.parametrize("line, head, rest", [
    ("every 30m check the inbox", "every 30m", "check the inbox"),
    ("every 2 hours stretch", "every 2 hours", "stretch"),
    ("in 10m call mum", "in 10m", "call mum"),
    ("0 8 * * 1-5 morning brief", "0 8 * * 1-5", "morning brief"),
    ("2026-12-01 08:00 dentist", "2026-12-01 08:00", "dentist"),
    ("2026-12-01T08:00 dentist", "2026-12-01T08:00", "dentist"),
    ("@daily tidy up", "@daily", "tidy up"),
    ("30m ping", "30m", "ping"),  # split, then refused by parse_schedule with both suggestions
    ("summarise the news", "", "summarise the news"),
])
def test_split_schedule(line, head, rest):
    assert split_schedule(line) == (head, rest)


def test_zones():
    assert get_zone("Europe/Paris") == PARIS
    assert isinstance(get_zone(None), ZoneInfo)  # the system's
    with pytest.raises(ScheduleError, match="IANA"):
        get_zone("Mars/Olympus")
    assert datetime.fromtimestamp(NOW, timezone.utc).hour == 10
