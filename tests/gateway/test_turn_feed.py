"""``TurnFeed``: what an agent thread reports reaches the event loop complete and in order, also
when it comes in bursts faster than the loop runs, and the feed ends with the turn."""
from __future__ import annotations

import asyncio
import threading

from gateway.platforms.api_server.sse import TurnFeed


def _reading(pick):
    """A feed, its turn, and a task reading the feed into a list (``pick(feed, kind, value)``
    each event); call inside a running loop."""
    loop = asyncio.get_running_loop()
    feed = TurnFeed(loop)
    turn: asyncio.Future = loop.create_future()
    got: list = []

    async def read() -> None:
        async for kind, value in feed.events(turn):
            got.append(pick(feed, kind, value))

    return feed, turn, got, asyncio.ensure_future(read())


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


def test_tool_events_wait_for_the_next_text_then_all_come_together():
    """No wake-up of their own for a tool's start and end (the next text, the turn's end or the
    poll brings them): the lot reaches the loop as one batch, in order; text never waits."""
    async def main() -> list:
        feed, turn, got, reader = _reading(
            lambda feed, kind, value: (kind, value["type"] if kind == "tool" else value,
                                       feed.more()))

        async def settle() -> list:
            for _ in range(5):
                await asyncio.sleep(0)
            return list(got)

        feed.on_tool({"type": "tool_start", "name": "read_file"})
        after_start = await settle()
        feed.on_tool({"type": "tool_end", "name": "read_file"})
        after_end = await settle()
        feed.on_delta("it says hi")
        after_text = await settle()
        turn.set_result(None)
        await reader
        return [after_start, after_end, after_text]

    after_start, after_end, after_text = asyncio.run(main())
    assert after_start == [] and after_end == []
    assert after_text == [("tool", "tool_start", True), ("tool", "tool_end", True),
                          ("delta", "it says hi", False)]


def test_a_slow_tools_start_arrives_with_the_poll_before_its_end():
    """The stream's own poll (``sse.POLL_SECONDS``, half a second) brings a running tool's start."""
    async def main() -> list:
        feed, turn, got, reader = _reading(lambda feed, kind, value: value["type"])
        threading.Thread(target=feed.on_tool, args=({"type": "tool_start"},)).start()
        for _ in range(1000):  # the tool is still running: only the poll can bring its start
            if got:
                break
            await asyncio.sleep(0.01)
        feed.on_tool({"type": "tool_end"})
        turn.set_result(None)
        await reader
        return got

    assert asyncio.run(main()) == ["tool_start", "tool_end"]
