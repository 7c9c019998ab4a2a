"""``hermes gateway run|status`` and ``hermes pairing approve|list|revoke`` (also ``python -m gateway.cli``).

Settings: environment > ``config.yaml`` ``gateway:`` section > defaults. The foreground process logs to
``HERMES_HOME/logs/gateway.log``, writes ``HERMES_HOME/gateway.pid`` and ``gateway.json`` (status), and
drains on SIGTERM/SIGINT.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import logging.handlers
import os
import secrets
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from hermes_core.files import atomic_write
from hermes_core.config import (ConfigError, config_path, hermes_home, load_config, load_env_file,
                                read_raw_config)
from hermes_core.home import create_private_file, ensure_home, ensure_private_dir, write_env_var

log = logging.getLogger("gateway")
PRESTART_THREADS = 128  # turn threads started at warm-up; more start (off the event loop) as needed
STATUS_INTERVAL = 2.0  # seconds between refreshes of gateway.json (what `hermes gateway status` reads)
_TRUE = {"1", "true", "yes", "on"}


def status_path() -> Path:
    return hermes_home() / "gateway.json"


def pid_path() -> Path:
    return hermes_home() / "gateway.pid"


def worker_status_path(index: int) -> Path:
    """Where worker ``index`` of ``--workers N`` writes its own status (gateway.json lists them)."""
    return hermes_home() / "gateway-workers" / f"{index}.json"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_status() -> Optional[dict[str, Any]]:
    try:
        data = json.loads(status_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("state") not in ("stopped", None) and not _pid_alive(int(data.get("pid") or 0)):
        data["state"] = "dead"  # killed without a chance to say so
    if isinstance(data.get("workers"), list):
        _merge_workers(data)
    return data


def _merge_workers(data: dict[str, Any]) -> None:
    """A supervisor's status lists its workers; each worker's own file adds its figures."""
    totals = {"turns_completed": 0, "sessions": 0, "cached_agents": 0}
    for w in data["workers"]:
        try:
            own = json.loads(worker_status_path(int(w.get("index", -1))).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if own.get("pid") != w.get("pid"):
            continue  # a previous incarnation's file
        for name in ("turns", "turns_completed", "sessions", "cached_agents", "telegram", "cron"):
            if name in own:
                w[name] = own[name]
        for name in totals:
            totals[name] += int(own.get(name) or 0)
    data.update(totals)


_status_failures: dict[str, float] = {}  # what went wrong writing the status -> when last logged


def _write_status(path: Optional[Path] = None, **fields: Any) -> None:
    """Refresh the status file. It is a report, never a reason to stop: a failure (out of file
    descriptors, a full disk) is logged once a minute per kind and the next refresh tries again."""
    target = path or status_path()
    data = {"pid": os.getpid(), "updated_at": time.time(), **fields}
    try:
        atomic_write(target, json.dumps(data, indent=1, default=str))
    except (OSError, ValueError, TypeError) as exc:
        kind = f"{type(exc).__name__}:{getattr(exc, 'errno', '')}"
        if time.monotonic() - _status_failures.get(kind, -1e9) >= 60:
            _status_failures[kind] = time.monotonic()
            log.warning("could not write %s (%s); retrying at the next refresh", target, exc)


class _Redact(logging.Filter):
    """Secrets never reach the log, whichever library formats them (httpx logs bot-token URLs)."""

    def __init__(self, secrets_: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets_ if s and len(s) >= 6]

    def redact(self, text: str) -> str:
        from hermes_core.redact import redact

        return redact(text, self.secrets)  # the values, then URL passwords and key blocks

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = self.redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        # a traceback is text too: format it here, redacted, so handlers print this instead
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


_TRACEBACKS = logging.Formatter()


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Every log file (the first and each one after a rollover) is created 0600."""

    def _open(self) -> Any:
        create_private_file(Path(self.baseFilename))
        return super()._open()


def _setup_logging(secrets_: list[str], verbose: bool,
                   worker: Optional[int] = None) -> tuple[Path, list[logging.Handler]]:
    """``logs/gateway.log``; worker ``i`` of ``--workers N`` logs to ``logs/gateway-<i>.log`` (one
    rotating file per process) and tags its console lines."""
    logs = ensure_private_dir(hermes_home() / "logs")
    path = logs / ("gateway.log" if worker is None else f"gateway-{worker}.log")
    tag = "" if worker is None else f"[worker {worker}] "
    fmt = logging.Formatter(f"%(asctime)s %(levelname)s {tag}%(name)s: %(message)s")
    redact = _Redact(secrets_)
    file_handler = _PrivateRotatingFileHandler(path, maxBytes=5 << 20, backupCount=3, encoding="utf-8")
    console = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for handler in (file_handler, console):
        handler.setFormatter(fmt)
        handler.addFilter(redact)
        root.addHandler(handler)
    for noisy in ("httpx", "httpx2", "httpcore", "telegram", "aiohttp.access", "openai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path, [file_handler, console]


def _section(gw: dict[str, Any], name: str) -> dict[str, Any]:
    value = gw.get(name)
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[str]:
    """A config list given as a YAML list or a comma-separated string."""
    if isinstance(value, (list, tuple, set)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value or "").split(",") if v.strip()]


def _api_enabled(args: argparse.Namespace, api_cfg: dict[str, Any]) -> bool:
    return bool(args.api_server or os.environ.get("API_SERVER_ENABLED", "").lower() in _TRUE
                or api_cfg.get("enabled"))


def _configured_key(api_cfg: dict[str, Any]) -> Optional[str]:
    return os.environ.get("API_SERVER_KEY") or api_cfg.get("key") or api_cfg.get("api_key") or None


def ensure_api_key(api_cfg: dict[str, Any]) -> Optional[Path]:
    """The API server always needs a key: with none configured, generate a strong one into
    ``HERMES_HOME/.env`` (mode 600, other lines kept) and return that file; None when one was set."""
    if _configured_key(api_cfg):
        return None
    return write_env_var("API_SERVER_KEY", secrets.token_urlsafe(32))


def api_address(args: argparse.Namespace, api_cfg: dict[str, Any]) -> tuple[str, int]:
    """(host, port) of the API server: flags > environment > config > defaults."""
    from gateway.platforms.api_server import DEFAULT_HOST, DEFAULT_PORT

    env = os.environ
    host = args.host or env.get("API_SERVER_HOST") or api_cfg.get("host") or DEFAULT_HOST
    return str(host), int(args.port if args.port is not None else
                          env.get("API_SERVER_PORT") or api_cfg.get("port") or DEFAULT_PORT)


def run_flags(args: argparse.Namespace) -> list[str]:
    """The ``run`` flags a ``--workers`` supervisor hands each worker (not ``--workers``/``--port``)."""
    flags = ["--api-server"] if args.api_server else []
    flags += ["--host", args.host] if args.host else []
    flags += ["--no-telegram"] if args.no_telegram else []
    flags += ["--busy-policy", args.busy_policy] if args.busy_policy else []
    flags += ["--drain-timeout", str(args.drain_timeout)] if args.drain_timeout is not None else []
    return flags + (["-v"] if args.verbose else [])


def worker_count(args: argparse.Namespace, gw: dict[str, Any]) -> int:
    """``--workers`` > ``gateway.workers`` > 1."""
    raw = args.workers if args.workers is not None else gw.get("workers", 1)
    try:
        count = int(raw)
    except (TypeError, ValueError):
        count = 0
    if count < 1:
        raise ConfigError(f"--workers / gateway.workers must be a whole number >= 1, not {raw!r}")
    return count


def _ids(value: Any) -> set[str]:
    if isinstance(value, (list, tuple, set)):
        return {str(v) for v in value}
    return {v.strip() for v in str(value or "").split(",") if v.strip()}


def _connection_limits(api_cfg: dict[str, Any]) -> dict[str, Any]:
    """``gateway.api_server.idle_timeout`` (seconds), ``max_connections``; junk stops start-up."""
    from gateway.platforms.api_server.connections import DEFAULT_IDLE_TIMEOUT

    out: dict[str, Any] = {}
    settings = (("idle_timeout", float, DEFAULT_IDLE_TIMEOUT), ("max_connections", int, None))
    for key, kind, default in settings:
        raw = api_cfg.get(key, default)
        try:
            value = None if raw is None else kind(raw)
        except (TypeError, ValueError):
            value = -1
        if value is not None and value <= 0:
            raise ConfigError(f"gateway.api_server.{key} must be a positive number, not {raw!r}")
        out[key] = value
    return out


def _quiet_loop_errors() -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """The event loop's error handler: each distinct message (e.g. ``socket.accept() out of system
    resource`` while descriptors run out, retried every second) is logged once a minute, not with
    a traceback per retry."""
    last: dict[str, float] = {}

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message") or "event loop error")
        exc = context.get("exception")
        key = f"{message}:{type(exc).__name__}"
        if time.monotonic() - last.get(key, -1e9) < 60:
            return
        last[key] = time.monotonic()
        log.error("%s%s (repeats are not logged for a minute)", message, f": {exc}" if exc else "")

    return handle


async def _serve(args: argparse.Namespace, cfg: Any, turns: Any) -> int:
    from gateway.access import AccessControl, PairingStore
    from gateway.health import load_report, register_detailed
    from gateway.platforms.api_server import DEFAULT_MAX_BODY, APIServer
    from gateway.runner import GatewayRunner, default_agent_factory
    from hermes_state import SessionDB

    env, gw = os.environ, dict(cfg.gateway or {})
    api_cfg, tg_cfg = _section(gw, "api_server"), _section(gw, "telegram")
    db = SessionDB.from_config(cfg)
    adapters: list[Any] = []
    token = env.get("TELEGRAM_BOT_TOKEN") or tg_cfg.get("token") or tg_cfg.get("bot_token")
    if token and tg_cfg.get("enabled", True) and not args.no_telegram:
        from gateway.platforms.telegram import TelegramAdapter

        adapters.append(TelegramAdapter(token, base_url=env.get("TELEGRAM_BASE_URL") or tg_cfg.get("base_url"),
                                        poll_timeout=float(tg_cfg.get("poll_timeout", 10))))
    from gateway.lease import is_shared, lease_wait

    if adapters and is_shared(db):  # other processes share the store: one of them polls (an election)
        from gateway.election import DEFAULT_INTERVAL, ElectedPoller

        interval = float(tg_cfg.get("election_interval", DEFAULT_INTERVAL))
        adapters = [ElectedPoller(a, db, interval) for a in adapters]
    api_on = _api_enabled(args, api_cfg)
    allowed = {"*": _ids(gw.get("allowed_users")), "telegram": _ids(tg_cfg.get("allowed_users"))}
    runner = GatewayRunner(
        session_db=db, agent_factory=default_agent_factory(cfg, db), adapters=adapters,
        access=AccessControl(PairingStore(db=db), config_allowed=allowed),
        busy_policy=args.busy_policy or str(gw.get("busy_policy", "queue")),
        max_workers=turns.threads, turn_limit=turns.limit, max_cached_agents=int(gw.get("max_cached_agents", 1000)),
        lease_wait=lease_wait(gw))
    api = None
    if api_on:
        host, port = api_address(args, api_cfg)
        worker_header = {"X-Hermes-Worker": str(os.getpid())} if args.worker is not None else {}
        api = APIServer(runner, host=host, port=port, **_connection_limits(api_cfg),
                        key=_configured_key(api_cfg), max_body_bytes=int(api_cfg.get("max_body_bytes", DEFAULT_MAX_BODY)),
                        allowed_hosts=_list(api_cfg.get("allowed_hosts")),
                        cors_origins=_list(api_cfg.get("cors_origins")),
                        reuse_port=args.worker is not None, response_headers=worker_header)
    if api is not None:
        api.check_port()  # a busy port says so now, not after the warm-up
    if not adapters and api is None:
        print("hermes gateway: nothing to run. Enable the API server (API_SERVER_ENABLED=true or "
              "`--api-server`) or set TELEGRAM_BOT_TOKEN.", file=sys.stderr)
        return 2

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.set_exception_handler(_quiet_loop_errors())
    platforms = [a.name for a in adapters] + (["api_server"] if api else [])
    started = time.time()
    from tools.mcp.manager import shutdown_servers, start_servers
    from gateway.cron_api import jobs_api
    from cron.delivery import registered_sender
    from gateway.delivery import adapter_sender
    from cron.scheduler import Scheduler

    # one set of MCP servers per process, shared by every session; agents wait for them at their
    # first turn (up to connect_timeout), never at start-up
    start_servers(cfg)  # its news goes to the `hermes.mcp` logger, so into gateway.log
    scheduler = Scheduler(db, cfg, sender=adapter_sender(runner.adapters, loop, registered_sender(cfg)))
    from gateway.warmup import warm_up

    log.info("turn limit %d (%s), %d turn threads", turns.limit, turns.source, turns.threads)
    warm = None
    if gw.get("warmup", True):
        warm = (await asyncio.to_thread(warm_up, runner.agent_factory, db)).as_dict()
        runner.pool.prestart(PRESTART_THREADS)  # the first burst finds its threads running
    def roles() -> dict[str, Any]:
        """Which worker this is and whether it polls (``--workers``; the election on shared stores)."""
        out: dict[str, Any] = {} if args.worker is None else {"worker": args.worker}
        out.update({a.name: a.role for a in adapters if hasattr(a, "role")})
        return out

    if api is not None:
        api.add_routes(register_detailed(lambda: {**load_report(runner, started, warm, turns.source),
                                                  **roles()}))
    await runner.start()
    if api is not None:
        from agent.tool_policy import run_policy
        from gateway.route_plugins import plugin_registrars

        for name, registrar in plugin_registrars(cfg):  # e.g. the dashboard (gateway.dashboard)
            log.info("API server: mounting %s", name)
            api.add_routes(registrar)
        await api.add_routes(jobs_api(scheduler, run_policy(cfg))).start()
    address = f"http://{api.host}:{api.port}" if api else None
    cron_task = asyncio.ensure_future(scheduler.serve(stop))

    own_status = worker_status_path(args.worker) if args.worker is not None else None
    if own_status is not None:
        ensure_private_dir(own_status.parent)
    parent = os.getppid()

    def status(state: str) -> None:
        try:  # a report: whatever goes wrong gathering it never stops the gateway
            _write_status(own_status, state=state, started_at=started, platforms=platforms,
                          api_server=address, turns_completed=runner.turns_completed,
                          cron=scheduler.status(), turns=runner.capacity.snapshot(), **roles(),
                          platform_status=runner.platforms.snapshot(), **runner.session_counts())
        except Exception as exc:  # noqa: BLE001
            log.warning("could not gather the gateway status: %s", exc)

    status("running")
    print(f"READY gateway pid={os.getpid()} platforms={','.join(platforms)}" + (f" api={address}" if address else ""),
          flush=True)
    log.info("gateway running (pid %d, platforms: %s)", os.getpid(), ", ".join(platforms))
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), timeout=min(STATUS_INTERVAL, scheduler.tick_interval))
        except asyncio.TimeoutError:
            status("running")
        if own_status is not None and os.getppid() != parent:
            log.warning("the supervisor (pid %d) is gone; draining", parent)
            stop.set()
    log.info("signal received: draining")
    status("draining")
    drain = float(args.drain_timeout if args.drain_timeout is not None else gw.get("drain_timeout", 60))
    await cron_task
    await asyncio.to_thread(scheduler.shutdown, drain)  # runs still deliver through the adapters
    clean = await runner.shutdown(drain_timeout=drain)
    if api is not None:
        await api.stop()
    await asyncio.to_thread(shutdown_servers)
    status("stopped")
    log.info("gateway stopped (%s)", "clean" if clean else "turns abandoned after persisting their messages")
    return 0 if clean else 75


def _cmd_run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ConfigError as exc:  # whatever step read the configuration: one line, no traceback
        print(f"hermes gateway: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from gateway.capacity import raise_open_files_limit, turn_settings

    load_env_file()
    cfg = load_config()
    raise_open_files_limit()  # before the limit is derived: sockets bound it too
    turns = turn_settings(dict(cfg.gateway or {}))  # a junk setting stops here, in one line
    gw = dict(cfg.gateway or {})
    from gateway.lease import lease_wait

    lease_wait(gw)
    workers = worker_count(args, gw) if args.worker is None else 1
    ensure_home()
    if workers > 1:
        refusal = _one_process_store()
        if refusal:
            print(f"hermes gateway: {refusal}", file=sys.stderr)
            return 2
    current = read_status()
    if args.worker is None and current and current.get("state") in ("running", "draining") \
            and int(current.get("pid", 0)) != os.getpid():
        print(f"hermes gateway: already running (pid {current['pid']}); stop it first.", file=sys.stderr)
        return 1
    secrets_ = [os.environ.get(n, "") for n in ("TELEGRAM_BOT_TOKEN", "API_SERVER_KEY", "OPENAI_API_KEY",
                                                 "OPENROUTER_API_KEY")]
    tg, api = _section(gw, "telegram"), _section(gw, "api_server")
    key_file = ensure_api_key(api) if _api_enabled(args, api) else None
    secrets_.append(os.environ.get("API_SERVER_KEY", ""))
    secrets_ += [str(v or "") for v in (tg.get("token"), tg.get("bot_token"), api.get("key"), api.get("api_key"),
                                        cfg.model.api_key)]
    logfile, handlers = _setup_logging(secrets_, args.verbose, args.worker)
    if args.worker is None:
        pid_path().write_text(f"{os.getpid()}\n", encoding="utf-8")
    log.info("logging to %s", logfile)
    from hermes_core.config_keys import warning_lines

    for line in warning_lines(read_raw_config(), str(config_path())):  # typos, named once
        log.warning("%s", line)
    if key_file is not None:
        log.warning("API server: generated an API key and saved it as API_SERVER_KEY in %s (mode 600); "
                    "clients send it as 'Authorization: Bearer <key>'", key_file)
    try:
        rc = _supervise(args, gw, workers) if workers > 1 else asyncio.run(_serve(args, cfg, turns))
    except Exception as exc:  # startup errors (bad address, key missing on a public host): one clear line
        handlers[-1].setLevel(logging.CRITICAL)  # the console gets the line below, not a log record too
        log.error("gateway failed: %s", exc)
        print(f"hermes gateway: {exc}", file=sys.stderr)
        _write_status(worker_status_path(args.worker) if args.worker is not None else None,
                      state="stopped", error=str(exc))
        rc = 1
    finally:
        if args.worker is None:
            pid_path().unlink(missing_ok=True)
        for handler in handlers:
            logging.getLogger().removeHandler(handler)
            handler.close()
    if rc == 75:  # a turn thread is stuck in a provider call; its user message is already saved
        os._exit(0)
    return rc


def _one_process_store() -> Optional[str]:
    """Why ``--workers`` above 1 cannot run on the configured store (None when it can)."""
    from gateway.lease import is_shared
    from hermes_state import SessionDB

    try:
        db = SessionDB.from_config(load_config())
    except Exception as exc:  # unreachable database, wrong password: the store's own one line
        return str(exc)
    try:
        if is_shared(db):
            return None
    finally:
        db.close()
    return ("--workers above 1 needs a PostgreSQL store (SQLite serves one process): set store.url in "
            "config.yaml or HERMES_DATABASE_URL to postgresql://user:password@host/db, or run one worker.")


def _supervise(args: argparse.Namespace, gw: dict[str, Any], count: int) -> int:
    """Run ``count`` workers (gateway.supervisor) until SIGTERM/SIGINT, then drain them."""
    from gateway.supervisor import Supervisor, reserve_port

    api_cfg, port, reserved = _section(gw, "api_server"), None, None
    if _api_enabled(args, api_cfg):
        host, wanted = api_address(args, api_cfg)
        try:
            reserved = reserve_port(host, wanted)
        except OSError as exc:
            raise RuntimeError(f"cannot listen on {host}:{wanted} ({exc.strerror or exc}); pick another "
                               "--port or stop what uses it") from None
        port = int(reserved.getsockname()[1])
    drain = float(args.drain_timeout if args.drain_timeout is not None else gw.get("drain_timeout", 60))
    sup = Supervisor(count, run_flags(args), port, drain, _write_status)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sup.stop.set())
    try:
        return sup.run()
    finally:
        if reserved is not None:
            reserved.close()


def gateway_main(argv: Optional[list[str]] = None) -> int:
    from hermes_cli.parsing import OneLineParser

    parser = OneLineParser(prog="hermes gateway", description="Run the messaging gateway and API server.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run in the foreground (logs to HERMES_HOME/logs/gateway.log)")
    run.add_argument("--api-server", action="store_true", help="enable the OpenAI-compatible API server")
    run.add_argument("--host", help="API server address (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="API server port (default 8642; 0 picks a free one)")
    run.add_argument("--no-telegram", action="store_true", help="do not start Telegram even if a token is set")
    run.add_argument("--busy-policy", choices=("queue", "interrupt"), help="a message for a busy session")
    run.add_argument("--drain-timeout", type=float, help="seconds running turns get on SIGTERM (default 60)")
    run.add_argument("--workers", type=int, help="worker processes sharing the API port (default 1; "
                                                 "more need a PostgreSQL store)")
    run.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # set by the supervisor for its workers
    run.add_argument("-v", "--verbose", action="store_true")
    st = sub.add_parser("status", help="is a gateway running here?")
    st.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from gateway.status_cmd import cmd_status

    return _cmd_run(args) if args.cmd == "run" else cmd_status(args)


def pairing_main(argv: Optional[list[str]] = None) -> int:
    """``hermes pairing ...`` (gateway.pairing_cmd)."""
    from gateway.pairing_cmd import pairing_main as run

    return run(argv)


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "pairing":
        return pairing_main(argv[1:])
    return gateway_main(argv)


if __name__ == "__main__":
    sys.exit(main())
