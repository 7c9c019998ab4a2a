"""The pure parts of ``hermes gateway run --workers N`` (gateway.supervisor, hermes_cli.gateway_cmd, gateway.settings)."""
from __future__ import annotations

import argparse
import socket
import sys

import pytest

from hermes_core.config import ConfigError, parse_config
from hermes_core.gateway_config import GatewayConfig
from gateway.settings import ServeOptions, worker_count
from hermes_cli.gateway_cmd import WORKER_LAUNCH, run_flags, serve_options
from gateway.supervisor import MAX_BACKOFF, exit_reason, reserve_port, restart_delay, worker_argv
from hermes_cli.gateway_status import worker_lines


def test_restart_delay_doubles_while_a_worker_keeps_dying_young():
    assert [restart_delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert restart_delay(50) == MAX_BACKOFF and restart_delay(0) == 0.5


def test_exit_reason_names_the_signal():
    assert exit_reason(-9) == "killed by SIGKILL" and exit_reason(-15) == "killed by SIGTERM"
    assert exit_reason(3) == "exit 3" and exit_reason(-200) == "killed by signal 200"


def _args(**kw) -> argparse.Namespace:
    base = dict(api_server=False, host=None, port=None, no_telegram=False, busy_policy=None, drain_timeout=None,
                verbose=False, workers=None, worker=None)
    return argparse.Namespace(**{**base, **kw})


def test_workers_get_the_supervisors_flags_their_index_and_the_reserved_port():
    args = _args(api_server=True, host="0.0.0.0", no_telegram=True, busy_policy="interrupt",
                 drain_timeout=5.0, verbose=True, workers=3, port=0)
    flags = run_flags(args)
    assert flags == ["--api-server", "--host", "0.0.0.0", "--no-telegram", "--busy-policy",
                     "interrupt", "--drain-timeout", "5.0", "-v"]
    command = list(serve_options(args).worker_command)  # what the launcher hands the gateway
    assert command == [sys.executable, "-m", "hermes_cli.main", "gateway", "run", *flags]
    assert WORKER_LAUNCH == ("-m", "hermes_cli.main", "gateway", "run")
    assert worker_argv(command, 2, 8642) == [*command, "--worker", "2", "--port", "8642"]
    assert worker_argv([], 0, None)[-2:] == ["--worker", "0"]  # no API server: no port


def test_worker_count_flag_beats_config_and_junk_is_refused():
    assert worker_count(ServeOptions(), GatewayConfig()) == 1
    four = parse_config({"gateway": {"workers": "4"}}).gateway
    assert worker_count(ServeOptions(), four) == 4
    assert worker_count(ServeOptions(workers=2), four) == 2
    for junk in (0, -1, "many"):  # config.yaml: stopped when the file is read, in one line
        with pytest.raises(ConfigError, match="gateway.workers"):
            parse_config({"gateway": {"workers": junk}})
    with pytest.raises(ConfigError, match="--workers"):
        worker_count(ServeOptions(workers=0), four)


def test_status_lines_for_each_worker():
    lines = worker_lines([
        {"index": 0, "pid": 11, "state": "running", "turns_completed": 7, "turns": {"in_flight": 2, "queued": 1},
         "telegram": "polling", "restarts": 0},
        {"index": 1, "pid": 12, "state": "restarting", "restarts": 2, "last_exit": "killed by SIGKILL"},
    ])
    assert lines == ["worker 0: running (pid 11), turns: 7 done, 2 in flight, 1 queued, telegram: polling",
                     "worker 1: restarting (pid 12), restarts: 2 (last: killed by SIGKILL)"]


def test_a_reserved_port_is_shared_by_workers_and_refused_to_others():
    held = reserve_port("127.0.0.1", 0)
    try:
        port = held.getsockname()[1]
        worker = reserve_port("127.0.0.1", port)  # what a worker's SO_REUSEPORT listener does
        worker.listen()
        worker.close()
        plain = socket.socket()
        with pytest.raises(OSError):
            plain.bind(("127.0.0.1", port))  # someone else's server cannot take it
        plain.close()
    finally:
        held.close()
