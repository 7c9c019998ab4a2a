"""The store package keeps the house rules (issue 22): files <= 400 lines, functions <= 60,
lines <= 100 columns, and of the project it imports only the foundation (``hermes_core``),
at module level and inside functions alike."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hermes_state"
PROJECT = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()} | {
    p.stem for p in ROOT.glob("*.py")}
DRIVERS = {"psycopg", "psycopg_pool"}


def _files() -> list[Path]:
    return sorted(PACKAGE.glob("*.py"))


def test_sizes() -> None:
    over = []
    for path in _files():
        lines = path.read_text().splitlines()
        if len(lines) > 400:
            over.append(f"{path.name}: {len(lines)} lines")
        over += [f"{path.name}:{n}: {len(line)} columns" for n, line in enumerate(lines, 1)
                 if len(line) > 100]
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    over.append(f"{path.name}:{node.lineno} {node.name}: {length} lines")
    assert over == []


def test_imports_only_the_foundation() -> None:
    wrong = []
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue  # relative: inside the package
            for name in names:
                top = name.split(".")[0]
                if top in PROJECT and top != "hermes_core":
                    wrong.append(f"{path.name}:{node.lineno} imports {name}")
                elif top not in PROJECT and top not in DRIVERS \
                        and top not in sys.stdlib_module_names:
                    wrong.append(f"{path.name}:{node.lineno} imports {name} (not a driver)")
    assert PROJECT >= {"hermes_core", "hermes_state", "agent", "tools"}
    assert wrong == []
