"""``RequestView`` keeps each message's estimate and cut between requests of one agent: it must
give exactly what ``request_messages`` gives for the same history, whatever happened to the
history in between (growth, a compaction that replaces the head, an undo, a new window)."""
from __future__ import annotations

import random

from agent.request_view import NO_CAP, NO_REPLY, RequestView, request_messages


def _message(rng: random.Random, n: int) -> dict:
    kind = rng.choice(("user", "user", "assistant", "tool", "system", "big", "calls", "parts"))
    if kind == "big":
        return {"role": "user", "content": f"log line {n} " * rng.randint(200, 2000)}
    if kind == "calls":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "x"}' * rng.randint(1, 900)}}]}
    if kind == "parts":
        return {"role": "user", "content": [{"type": "text", "text": "see " * rng.randint(1, 3000)},
                                            {"type": "image_url", "image_url": {"url": "data:"}}]}
    if kind == "tool":
        return {"role": "tool", "tool_call_id": f"c{n}", "content": "out " * rng.randint(1, 1500)}
    return {"role": kind, "content": f"{kind} {n} " * rng.randint(1, 60)}


def test_the_cache_gives_what_request_messages_gives_through_every_kind_of_change():
    rng = random.Random(20261202)
    view, history, checked = RequestView(), [], 0
    caps = [(300, None), (300, 4000), (1200, 9000), (NO_CAP, None), (256, 2500)]
    cap, budget = caps[0]
    for step in range(600):
        action = rng.random()
        if action < 0.6:
            history.extend(_message(rng, step) for _ in range(rng.randint(1, 3)))
        elif action < 0.7 and history:  # a compaction: a new head, the tail kept as objects
            keep = rng.randint(0, len(history))
            history = [{"role": "user", "content": f"[summary {step}]"}] + history[keep:]
        elif action < 0.8 and history:  # an undo: the last messages go
            del history[rng.randint(0, len(history) - 1):]
        elif action < 0.85:
            cap, budget = rng.choice(caps)
        elif history:  # the same history asked for again, as the next model call of a turn does
            pass
        before = [dict(m) for m in history]
        got = view.messages(history, cap, budget)
        assert got == request_messages(history, cap, budget), (step, cap, budget)
        assert history == before  # the input is not changed
        checked += 1
    assert checked == 600


def test_a_replaced_message_at_the_same_place_is_estimated_afresh():
    view = RequestView()
    history = [{"role": "user", "content": "short"}, {"role": "assistant", "content": "ok"}]
    assert view.messages(history, 300)[1] == []
    history[1] = {"role": "assistant", "content": "long answer " * 1000}  # a new object
    sent, cut = view.messages(history, 300)
    assert cut == [1] and len(sent[1]["content"]) < len(history[1]["content"])


def test_placeholders_follow_the_history_they_belong_to():
    view = RequestView()
    history = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
    sent, _ = view.messages(history, 300)
    assert [m["content"] for m in sent] == ["one", NO_REPLY, "two"]
    del history[1:]
    history.append({"role": "assistant", "content": "answer"})
    assert [m["content"] for m in view.messages(history, 300)[0]] == ["one", "answer"]
