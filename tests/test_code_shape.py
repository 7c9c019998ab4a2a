"""The house size rules (issue 22): lines <= 100 columns, functions <= 60 lines, files <= 400.

Small pieces read well and merge well. Every product package keeps the rules (``run_agent.py``,
the seed's facade, too), so a package once clean cannot quietly grow back.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hermes_core", "hermes_state", "tools", "agent", "cron", "gateway", "acp_agent",
            "dashboard", "mcp_server", "hermes_cli", "run_agent")
MAX_COLUMNS = 100
MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 400


def shape_problems(name: str, source: str) -> list[str]:
    """One line per break of the size rules in ``source`` (the file called ``name``). Pure."""
    lines = source.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    problems = []
    if len(lines) > MAX_FILE_LINES:
        problems.append(f"{name}: {len(lines)} lines (max {MAX_FILE_LINES}); split the module")
    for number, line in enumerate(lines, start=1):
        width = len(line.rstrip("\r"))
        if width > MAX_COLUMNS:
            problems.append(f"{name}:{number}: {width} columns (max {MAX_COLUMNS})")
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{name}:{node.lineno}: function {node.name} is {length} lines "
                                f"(max {MAX_FUNCTION_LINES})")
    return problems


def _sources(package: str) -> list[Path]:
    if (ROOT / f"{package}.py").is_file():
        return [ROOT / f"{package}.py"]
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("package", PACKAGES)
def test_package_keeps_the_size_rules(package: str) -> None:
    sources = _sources(package)
    assert sources, f"no Python files under {package}/: was the package renamed? fix PACKAGES"
    problems = []
    for path in sources:
        name = str(path.relative_to(ROOT))
        problems += shape_problems(name, path.read_text(encoding="utf-8"))
    assert not problems, (f"{len(problems)} break(s) of the size rules in {package}/:\n"
                          + "\n".join(problems))


def test_each_kind_of_offender_is_named() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(60))  # def line + 60 = 61 lines
    source = ("def long_one():\n" + body + "\n\nasync def short_one():\n    pass\n"
              + "y = '" + "a" * 100 + "'\n" + "#\n" * 340)
    problems = shape_problems("pkg/mod.py", source)
    assert problems == [
        "pkg/mod.py: 406 lines (max 400); split the module",
        "pkg/mod.py:66: 106 columns (max 100)",
        "pkg/mod.py:1: function long_one is 61 lines (max 60)",
    ]


def test_the_limits_themselves_pass() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(59))  # 60 lines with the def
    source = "def just_fits():\n" + body + "z = '" + "b" * 94 + "'\n" + "#\n" * 339
    assert source.count("\n") == 400
    assert max(len(line) for line in source.split("\n")) == 100
    assert shape_problems("pkg/ok.py", source) == []
