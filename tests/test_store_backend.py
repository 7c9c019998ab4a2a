"""The typed seam of the store (issue 22): both backends implement ``StoreBackend`` member for
member, signature for signature; the shared code calls nothing else on a backend and reaches
into no one's private attributes."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Optional

from hermes_state.backend import StoreBackend
from hermes_state.sqlite_backend import SQLiteBackend

PACKAGE = Path(__file__).resolve().parents[1] / "hermes_state"
# the engines themselves (and the lock connection PostgreSQL's uses) may touch their own parts
ENGINE_FILES = {"sqlite_backend.py", "postgres_backend.py", "pg_advisory.py"}


def protocol_members() -> set[str]:
    declared = {n for n in vars(StoreBackend) if not n.startswith("_")}
    return declared | set(StoreBackend.__annotations__)


def _parameters(fn: object, bound: bool) -> list[tuple[str, object, bool]]:
    params = list(inspect.signature(fn).parameters.values())  # type: ignore[arg-type]
    if not bound:
        params = params[1:]  # self
    return [(p.name, p.kind, p.default is inspect.Parameter.empty) for p in params]


def test_both_backends_implement_every_member_with_its_signature(tmp_path: Path,
                                                                 store_url: Optional[str]):
    if store_url is None:
        backend: StoreBackend = SQLiteBackend(tmp_path / "state.db")
    else:
        from hermes_state.postgres_backend import PostgresBackend
        backend = PostgresBackend(store_url)
    try:
        assert isinstance(backend, StoreBackend)
        for name in sorted(protocol_members()):
            assert hasattr(backend, name), f"{type(backend).__name__} lacks {name}"
            declared = getattr(StoreBackend, name, None)
            if callable(declared):
                assert _parameters(getattr(backend, name), bound=True) == \
                    _parameters(declared, bound=False), f"{type(backend).__name__}.{name}"
        for name, kind in StoreBackend.__annotations__.items():  # data members: declared kinds
            value = getattr(backend, name)
            assert isinstance(value, bool if kind == "bool" else (str, tuple)), name
        assert backend.applied_migrations()[0] == "core"
    finally:
        backend.close()


def _shared_modules() -> list[tuple[str, ast.AST]]:
    return [(p.name, ast.parse(p.read_text())) for p in sorted(PACKAGE.glob("*.py"))
            if p.name not in ENGINE_FILES]


def test_the_shared_code_calls_exactly_the_protocol_on_a_backend():
    used: set[str] = set()
    for _name, tree in _shared_modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "_b" and isinstance(node.value.value, ast.Name)
                    and node.value.value.id == "self"):
                used.add(node.attr)
    assert used <= protocol_members(), f"not in StoreBackend: {sorted(used - protocol_members())}"
    assert protocol_members() <= used, f"unused members: {sorted(protocol_members() - used)}"


def test_no_shared_module_reaches_into_another_objects_privates():
    found = []
    for name, tree in _shared_modules():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue  # its own (SessionDB's ``_b``, a mixin's helpers)
            found.append(f"{name}:{node.lineno} .{node.attr}")
    assert found == []
