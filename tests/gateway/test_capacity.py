"""gateway.capacity: the turn limit derived from the machine, and the gauge that enforces it (pure)."""
from __future__ import annotations

from typing import Any

import pytest

from hermes_core.config import ConfigError, parse_config
from gateway.capacity import (MAX_LIMIT, MIN_LIMIT, MachineLimits, TurnGauge, TurnLimitReached,
                              TurnSettings, derive_turn_limit, turn_settings, machine_limits, retry_after)

GiB = 1 << 30


def test_the_limit_follows_memory_and_holds_1000_turns_on_a_common_server():
    assert derive_turn_limit(MachineLimits(8 * GiB, None, None)) >= 1000
    small, large = (derive_turn_limit(MachineLimits(n * GiB, None, None)) for n in (1, 4))
    assert small < large and large == 4 * small
    assert derive_turn_limit(MachineLimits(10 * 1024 * GiB, None, None)) == MAX_LIMIT


def test_open_files_and_threads_bound_the_limit_too():
    plenty = 64 * GiB
    assert derive_turn_limit(MachineLimits(plenty, 1024, None)) == (1024 - 256) // 3
    assert derive_turn_limit(MachineLimits(plenty, None, 1000)) == 500
    assert derive_turn_limit(MachineLimits(None, None, None)) == MAX_LIMIT  # nothing known: the ceiling
    assert derive_turn_limit(MachineLimits(1 << 20, 300, 10)) == MIN_LIMIT  # never below the floor


def test_this_machine_reads_as_something_sane():
    limits = machine_limits()
    assert limits.available_bytes is None or limits.available_bytes > 0
    assert MIN_LIMIT <= derive_turn_limit(limits) <= MAX_LIMIT


def test_retry_after_is_about_one_turn():
    assert retry_after(None) == 5
    assert retry_after(0.2) == 1 and retry_after(4.3) == 5 and retry_after(3600) == 60


def test_gauge_refuses_past_the_limit_and_counts_what_it_holds():
    gauge = TurnGauge(limit=2)
    gauge.admit()
    gauge.admit()
    with pytest.raises(TurnLimitReached) as refused:
        gauge.admit()
    assert refused.value.limit == 2 and refused.value.retry_after == 5 and "2 turns" in str(refused.value)
    t = gauge.started()
    assert gauge.snapshot() | {"mean_turn_seconds": None} == {
        "in_flight": 1, "queued": 1, "accepted": 2, "limit": 2, "peak_in_flight": 1, "refused": 1,
        "mean_turn_seconds": None}
    gauge.finished(t - 3.0)  # a turn that took ~3 s
    gauge.release()
    gauge.admit()  # room again
    snap = gauge.snapshot()
    assert snap["in_flight"] == 0 and snap["accepted"] == 2 and snap["mean_turn_seconds"] >= 3.0
    with pytest.raises(TurnLimitReached) as refused:
        gauge.admit()
    assert refused.value.retry_after in (3, 4)


def _gateway(section: dict) -> Any:
    """The ``gateway:`` section as every reader gets it: validated when config.yaml is read."""
    return parse_config({"gateway": section}).gateway


def test_turn_settings_from_config():
    assert turn_settings(_gateway({"turn_limit": 7})) == TurnSettings(7, 7, "gateway.turn_limit")
    assert turn_settings(_gateway({"turn_limit": "12", "max_concurrent_turns": 4})) == TurnSettings(12, 4, "gateway.turn_limit")
    derived = turn_settings(_gateway({"turn_limit": "auto"}))
    assert derived.limit >= MIN_LIMIT and derived.threads == derived.limit and "derived" in derived.source
    again = turn_settings(_gateway({}))  # the same derivation (free memory may have moved a little meanwhile)
    assert again.source == derived.source and abs(again.limit - derived.limit) <= derived.limit // 20
    assert turn_settings(_gateway({"max_concurrent_turns": 128})).threads == 128  # an explicit choice is kept
    for key in ("turn_limit", "max_concurrent_turns"):
        for bad in (0, -3, "lots", [1]):
            with pytest.raises(ConfigError, match=f"gateway.{key}"):
                _gateway({key: bad})  # refused when config.yaml is read
