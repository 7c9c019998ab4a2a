"""Finished conversations as ShareGPT-style JSON lines, for people who fine-tune on their own
traces."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

_ROLE = {"system": "system", "user": "human", "assistant": "gpt", "tool": "tool"}


def to_sharegpt(messages: list[dict], system_prompt: Optional[str]) -> list[dict]:
    turns = []
    if system_prompt:
        turns.append({"from": "system", "value": system_prompt})
    for m in messages:
        value = m.get("content")
        if not isinstance(value, str):
            value = json.dumps(value) if value is not None else ""
        if m.get("tool_calls"):
            calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in m["tool_calls"]]
            value = (value + "\n" if value else "") + "\n".join(
                f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        turns.append({"from": _ROLE.get(m.get("role"), m.get("role") or "unknown"), "value": value})
    return turns


def save_trajectory(home: Path, messages: list[dict], system_prompt: Optional[str], model: str,
                    completed: bool, session_id: Optional[str]) -> Path:
    """Append one line; completed and failed conversations go to separate files."""
    folder = home / "trajectories"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("trajectory_samples.jsonl" if completed else "failed_trajectories.jsonl")
    record = {"conversations": to_sharegpt(messages, system_prompt), "timestamp": time.time(),
              "model": model, "completed": completed, "session_id": session_id}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path
