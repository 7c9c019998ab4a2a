"""``serve(options, cfg)``: run the gateway in the foreground until SIGTERM/SIGINT, as one process
or as a supervisor of ``--workers N`` (``gateway.supervisor``); returns the exit code.

The launcher (``hermes gateway run``, ``hermes_cli.gateway_cmd``) parses the flags and loads the
configuration; everything after that is here. The process logs to ``HERMES_HOME/logs/gateway.log``,
writes ``gateway.pid`` and ``gateway.json`` (status), and drains on a signal. Whatever fails during
start-up ends in one line on stderr and exit 1, never a traceback.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import Optional

from hermes_core.config import HermesConfig, config_path, load_plugins, read_raw_config
from hermes_core.home import ensure_home
from gateway.logs import RedactSecrets, remove_handlers, setup_logging
from gateway.settings import (ServeOptions, api_address, api_enabled, drain_timeout,
                              ensure_api_key, platform_secrets, secret_values, worker_count)
from gateway.status import pid_path, read_status, worker_status_path, write_status

log = logging.getLogger("gateway")
ABANDONED = 75  # a turn thread is stuck in a provider call; its user message is already saved


def serve(options: ServeOptions, cfg: HermesConfig) -> int:
    """Start, serve, drain; 0 when clean, 1 when start-up failed, 2 when there is nothing to run
    (or ``--workers`` cannot run on this store)."""
    from gateway.capacity import raise_open_files_limit, turn_settings

    raise_open_files_limit()  # before the limit is derived: sockets bound it too
    turns = turn_settings(cfg.gateway)
    workers = worker_count(options, cfg.gateway) if options.worker is None else 1
    ensure_home()
    refusal = one_process_store(cfg) if workers > 1 else None
    if refusal:
        print(f"hermes gateway: {refusal}", file=sys.stderr)
        return 2
    current = read_status()
    if options.worker is None and current and current.get("state") in ("running", "draining") \
            and int(current.get("pid", 0)) != os.getpid():
        print(f"hermes gateway: already running (pid {current['pid']}); stop it first.",
              file=sys.stderr)
        return 1
    api = cfg.gateway.api_server
    key_file = ensure_api_key(api) if api_enabled(options, api) else None
    redacting = RedactSecrets(secret_values(cfg.gateway, cfg.model.api_key))
    logfile, handlers = setup_logging(redacting, options.verbose, options.worker)
    if options.worker is None:
        pid_path().write_text(f"{os.getpid()}\n", encoding="utf-8")
    try:
        _announce(logfile, key_file)
        load_plugins(cfg)  # a plugin that fails is named in the log; the rest load
        redacting.add(platform_secrets())
        if workers > 1:
            rc = supervise(options, cfg, workers)
        else:
            from gateway.process import GatewayProcess

            rc = asyncio.run(GatewayProcess(options, cfg, turns).run())
    except Exception as exc:  # bad address, key missing on a public host: one clear line
        handlers[-1].setLevel(logging.CRITICAL)  # the console gets the line below, not a record too
        log.error("gateway failed: %s", exc)
        print(f"hermes gateway: {exc}", file=sys.stderr)
        own = worker_status_path(options.worker) if options.worker is not None else None
        write_status(own, state="stopped", error=str(exc))
        rc = 1
    finally:
        if options.worker is None:
            pid_path().unlink(missing_ok=True)
        remove_handlers(handlers)
    if rc == ABANDONED:
        os._exit(0)
    return rc


def _announce(logfile: object, key_file: object) -> None:
    """The log's first lines: where it is, config.yaml's unknown keys, a generated API key."""
    from hermes_core.config_keys import warning_lines

    log.info("logging to %s", logfile)
    for line in warning_lines(read_raw_config(), str(config_path())):  # typos, named once
        log.warning("%s", line)
    if key_file is not None:
        log.warning("API server: generated an API key and saved it as API_SERVER_KEY in %s "
                    "(mode 600); clients send it as 'Authorization: Bearer <key>'", key_file)


def one_process_store(cfg: HermesConfig) -> Optional[str]:
    """Why ``--workers`` above 1 cannot run on the configured store (None when it can)."""
    from gateway.lease import is_shared
    from hermes_state import SessionDB

    try:
        db = SessionDB.from_config(cfg)
    except Exception as exc:  # unreachable database, wrong password: the store's own one line
        return str(exc)
    try:
        if is_shared(db):
            return None
    finally:
        db.close()
    return ("--workers above 1 needs a PostgreSQL store (SQLite serves one process): set "
            "store.url in config.yaml or HERMES_DATABASE_URL to "
            "postgresql://user:password@host/db, or run one worker.")


def supervise(options: ServeOptions, cfg: HermesConfig, count: int) -> int:
    """Run ``count`` workers (gateway.supervisor) until SIGTERM/SIGINT, then drain them."""
    from gateway.supervisor import Supervisor, reserve_port

    port, reserved = None, None
    if api_enabled(options, cfg.gateway.api_server):
        host, wanted = api_address(options, cfg.gateway.api_server)
        try:
            reserved = reserve_port(host, wanted)
        except OSError as exc:
            raise RuntimeError(f"cannot listen on {host}:{wanted} ({exc.strerror or exc}); pick "
                               "another --port or stop what uses it") from None
        port = int(reserved.getsockname()[1])
    sup = Supervisor(count, list(options.worker_command), port, drain_timeout(options, cfg.gateway),
                     write_status)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sup.stop.set())
    try:
        return sup.run()
    finally:
        if reserved is not None:
            reserved.close()
