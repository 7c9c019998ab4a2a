"""The dashboard's memory and config pages: ``/api/dashboard/memory`` and ``/config``.

Memory edits follow ``hermes memory edit``: the whole file as text, checked by the memory format
(``tools.memory.format.problem``), written under the memory lock only if the file is still what
the page showed (else 409: the agent wrote meanwhile). Config edits are ``hermes config set``:
one dotted key, secrets to ``.env``, never a config.yaml that would not load.
"""
from __future__ import annotations

from typing import Any

from aiohttp import web

from dashboard.common import Refusal, body, handler, off_loop, text_field

TARGETS = ("memory", "user")


def memory_state() -> dict[str, Any]:
    from hermes_core.config import hermes_home, load_config
    from hermes_core.injection import scan
    from tools.memory import format as fmt
    from tools.memory import store

    home, budgets = hermes_home(), store.limits(load_config())
    out: dict[str, Any] = {}
    for target in TARGETS:
        path = store.file_path(home, target)
        text = store.read_text(path) or ""
        entries = fmt.parse(text)
        out[target] = {"path": str(path), "text": text, "entries": len(entries),
                       "used": fmt.usage(entries), "limit": budgets[target],
                       "held_back": [fmt.entry_id(e) for e in entries if scan(e, strict=True)]}
    return out


def save_memory(target: str, text: str, expected: str) -> dict[str, Any]:
    from hermes_core.config import hermes_home
    from tools.memory import format as fmt
    from tools.memory import store

    if target not in TARGETS:
        raise Refusal(404, f"No memory file {target!r}; it is 'memory' or 'user'.", "not_found")
    trouble = fmt.problem(text)
    if trouble:
        raise Refusal(400, f"{trouble}; nothing was saved.", "invalid_memory")
    home = hermes_home()
    path = store.file_path(home, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with store.locked(home):
        now = store.read_text(path) or ""
        if now != expected:
            raise Refusal(409, f"{path.name} changed since the page loaded it (the agent wrote to "
                               "it); reload to see the new text, your edit was not saved.",
                          "memory_changed")
        store.write(home, target, fmt.parse(text))
    return memory_state()


def config_state() -> dict[str, Any]:
    import yaml

    from hermes_core.config import config_path, env_path, parse_config, read_raw_config
    from hermes_core.config_edit import looks_secret, mask, masked_tree, read_env_file

    raw = read_raw_config()
    parse_config(raw, str(config_path()))
    env = {k: (mask(v) if looks_secret(k) else masked_tree(v)) for k, v in read_env_file().items()}
    return {"path": str(config_path()), "env_path": str(env_path()),
            "yaml": yaml.safe_dump(masked_tree(raw), sort_keys=False, allow_unicode=True)
            if raw else "", "env": env}


def set_config(key: str, value: str) -> dict[str, Any]:
    from hermes_core.config import ConfigError
    from hermes_core.config_edit import set_key

    try:
        line = set_key(key, value)
    except ConfigError as exc:
        raise Refusal(400, str(exc), "invalid_config") from None
    return {**config_state(), "message": line}


def register(server: Any) -> None:
    limit = getattr(server, "max_body", 1 << 20)

    @handler
    async def memory(_request: web.Request) -> Any:
        return await off_loop(memory_state)

    @handler
    async def memory_put(request: web.Request) -> Any:
        data = await body(request, limit)
        return await off_loop(save_memory, request.match_info["target"], text_field(data, "text"),
                              text_field(data, "expected"))

    @handler
    async def config(_request: web.Request) -> Any:
        from hermes_core.config import ConfigError

        try:
            return await off_loop(config_state)
        except ConfigError as exc:
            raise Refusal(500, str(exc), "config_error") from None

    @handler
    async def config_set(request: web.Request) -> Any:
        data = await body(request, limit)
        return await off_loop(set_config, text_field(data, "key", 200), text_field(data, "value"))

    server.add_endpoint("dashboard_memory", "GET", "/api/dashboard/memory", memory)
    server.add_endpoint("dashboard_memory_put", "PUT", "/api/dashboard/memory/{target}", memory_put)
    server.add_endpoint("dashboard_config", "GET", "/api/dashboard/config", config)
    server.add_endpoint("dashboard_config_set", "POST", "/api/dashboard/config", config_set)
