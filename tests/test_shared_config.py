"""``hermes_core.config.shared_config``: the config.yaml that tool availability checks read for
every new agent, parsed once while the file stays the same, and never stale: an edit between two
agents changes what the second is offered, even one that keeps the file's size and mtime."""
from __future__ import annotations

import os
import time

from hermes_core.config import shared_config
from tools.registry import get_tool_definitions


def offered() -> set[str]:
    return {d["function"]["name"] for d in get_tool_definitions()}


def write(path, text: str, age: float) -> None:
    path.write_text(text)
    t = time.time_ns() - int(age * 1e9)
    os.utime(path, ns=(t, t))


def test_a_config_edit_between_agents_changes_what_the_next_is_offered(hermes_home):
    cfg = hermes_home / "config.yaml"
    assert shared_config().web.backend is None  # no file: the defaults
    write(cfg, "web:\n  backend: nosuchengine\n", age=60)
    assert "web_search" not in offered()
    assert shared_config() is shared_config()  # unchanged file: one parse, shared
    write(cfg, "web:\n  backend: searxng\n  search_url: http://127.0.0.1:9/search\n", age=50)
    assert "web_search" in offered()
    cfg.unlink()
    assert shared_config().web.backend is None and "web_search" not in offered()


def test_a_same_size_edit_in_the_same_timestamp_tick_is_read(hermes_home):
    cfg = hermes_home / "config.yaml"
    t = time.time_ns()
    cfg.write_text("web:\n  backend: brave\n")
    os.utime(cfg, ns=(t, t))
    assert shared_config().web.backend == "brave"
    cfg.write_text("web:\n  backend: exaaa\n")  # same size, same inode
    os.utime(cfg, ns=(t, t))
    assert shared_config().web.backend == "exaaa"
