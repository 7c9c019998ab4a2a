"""``TurnFeed``: what an agent thread reports reaches the event loop complete and in order, also
when it comes in bursts faster than the loop runs, and the feed ends with the turn."""
from __future__ import annotations

import asyncio
import threading

from gateway.platforms.api_server.sse import TurnFeed


def test_a_burst_from_the_agent_thread_arrives_whole_in_order_then_the_feed_ends():
    async def main() -> list:
        loop = asyncio.get_running_loop()
        feed = TurnFeed(loop)
        turn: asyncio.Future = loop.create_future()

        def agent() -> None:
            for n in range(500):
                feed.on_delta(f"d{n}")
                if n == 250:
                    feed.on_tool({"type": "tool_start", "tool": "read_file"})
                    feed.on_tool({"type": "other"})  # not a progress event: dropped
            loop.call_soon_threadsafe(turn.set_result, "done")

        threading.Thread(target=agent).start()
        return [item async for item in feed.events(turn)]

    items = asyncio.run(main())
    assert [v for k, v in items if k == "delta"] == [f"d{n}" for n in range(500)]
    assert items[251] == ("tool", {"type": "tool_start", "tool": "read_file"})
    assert len(items) == 501


def test_a_quiet_turn_sends_keepalives_until_it_ends():
    async def main() -> list:
        loop = asyncio.get_running_loop()
        feed = TurnFeed(loop)
        turn: asyncio.Future = loop.create_future()
        loop.call_later(1.2, turn.set_result, None)
        return [item async for item in feed.events(turn, keepalive=0.4)]

    items = asyncio.run(main())
    assert items and all(item == ("keepalive", None) for item in items)


def test_more_text_takes_the_queued_deltas_up_to_the_next_tool_event_in_order():
    async def main() -> tuple:
        loop = asyncio.get_running_loop()
        feed = TurnFeed(loop)
        turn: asyncio.Future = loop.create_future()
        for text in ["a", "b", "c"]:
            feed.on_delta(text)
        feed.on_tool({"type": "tool_start", "tool": "read_file"})
        feed.on_delta("d")
        loop.call_soon(turn.set_result, None)
        got = []
        async for kind, value in feed.events(turn):
            got.append((kind, value + feed.more_text() if kind == "delta" else value))
        return got, feed.more_text()

    got, rest = asyncio.run(main())
    assert got == [("delta", "abc"), ("tool", {"type": "tool_start", "tool": "read_file"}),
                   ("delta", "d")]
    assert rest == ""

