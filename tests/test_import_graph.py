"""The house's layering, read from the source with ``ast`` (every import, at module top level or
inside a function): a broken rule fails here with the offending import named.

Layers, bottom up: ``hermes_core`` (the ground) < ``hermes_state`` (the store) < ``tools`` <
``agent`` + ``run_agent`` (the turn) < services (``cron``) < surfaces (``gateway``, ``acp``,
``dashboard``) < ``hermes_cli`` (the ``hermes`` command, which launches every surface).
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hermes_core", "hermes_state", "tools", "agent", "run_agent", "cron", "gateway",
            "acp_agent", "dashboard", "mcp_server", "hermes_cli")
SURFACES = ("gateway", "acp_agent", "dashboard", "mcp_server")
LAUNCHER = "hermes_cli"
LOOP = ("agent", "run_agent")
ALLOWED_CYCLE = "run_agent"  # the seed's pair: run_agent <-> the loop modules it drives


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        single = ROOT / f"{pkg}.py"
        if single.is_file():
            found[pkg] = single
            continue
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path) -> set[str]:
    """Project modules ``module`` imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_pkg else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        else:
            continue
        for t in targets:
            hit = _resolve(t)
            if hit and hit != module:
                out.add(hit)
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (annotations only, never imported)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                todo.extend(child.orelse)
                continue
            todo.append(child)


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _top(module: str) -> str:
    return module.split(".")[0]


def _violations(rule) -> list[str]:
    return sorted(f"{a} imports {b}" for a, deps in GRAPH.items() for b in deps if rule(a, b))


def test_the_foundation_imports_nothing_of_the_project():
    assert _violations(lambda a, b: _top(a) == "hermes_core" and _top(b) != "hermes_core") == []


def test_the_store_imports_only_the_foundation():
    assert _violations(lambda a, b: _top(a) == "hermes_state"
                       and _top(b) not in ("hermes_state", "hermes_core")) == []


def test_tools_never_import_the_loop_or_a_surface():
    banned = (*LOOP, *SURFACES, LAUNCHER, "cron")
    assert _violations(lambda a, b: _top(a) == "tools" and _top(b) in banned) == []


def test_no_surface_imports_another_or_the_launcher():
    assert _violations(lambda a, b: _top(a) in SURFACES and _top(b) != _top(a)
                       and _top(b) in (*SURFACES, LAUNCHER)) == []


def test_nothing_below_the_surfaces_imports_one():
    below = ("hermes_core", "hermes_state", "tools", *LOOP, "cron")
    assert _violations(lambda a, b: _top(a) in below and _top(b) in (*SURFACES, LAUNCHER)) == []


def _cycles() -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components, iteratively deep enough
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_but_the_seeds_pair():
    bad = []
    for comp in _cycles():
        rest = [m for m in comp if m != ALLOWED_CYCLE]
        # the one allowed cycle: run_agent and loop modules that import it back (patch points)
        back = {m for m in rest if ALLOWED_CYCLE in GRAPH[m]}
        if ALLOWED_CYCLE in comp and all(_top(m) == "agent" for m in rest) and back:
            sub = {m: GRAPH[m] - {ALLOWED_CYCLE} for m in rest}
            if not _cycle_among(sub):
                continue
        bad.append(" -> ".join(comp))
    assert bad == []


def _cycle_among(graph: dict[str, set[str]]) -> bool:
    seen: set[str] = set()
    active: set[str] = set()

    def dfs(v: str) -> bool:
        seen.add(v)
        active.add(v)
        for w in graph.get(v, ()):
            if w in active or (w not in seen and w in graph and dfs(w)):
                return True
        active.discard(v)
        return False

    return any(v not in seen and dfs(v) for v in graph)
