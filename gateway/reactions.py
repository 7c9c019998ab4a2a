"""SPEC §7: what the gateway does with the result of a turn.

- deferred (compression lock held elsewhere): keep the session and the user's message, say so
  softly;
- exhausted: bind the key (and every key sharing the session) to a fresh session, drop the agent,
  tell the user plainly;
- interrupted: nothing to keep beyond what the agent stored; the caller decides what to say;
- any other failure: keep the session, persist the user's message, drop the cached agent (the next
  turn reloads a consistent history), and claim "saved" only when the write really happened.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # pragma: no cover
    from gateway.runner import GatewayRunner
    from gateway.turn_state import SessionState, TurnRequest

log = logging.getLogger("gateway.runner")

LEASE_LOST = ("This gateway worker lost its hold on the conversation while answering (another "
              "worker took it over), so this answer was dropped. Your message is kept; send it "
              "again if it was not answered.")
SOFT_DEFERRED = ("Compression is already running for this conversation, so I couldn't answer just "
                 "now. Nothing was lost; your next message will go through.")


@dataclass
class TurnOutcome:
    """What a turn produced, after the gateway's reaction to it."""

    kind: str  # "ok" | "deferred" | "exhausted" | "failed" | "interrupted"
    text: str
    session_id: str
    result: dict[str, Any] = field(default_factory=dict)
    new_session_id: Optional[str] = None
    saved: bool = False  # a failed turn: its message is in the session (never on a stateless turn)


def short_error(result: dict[str, Any]) -> str:
    err = str(result.get("error") or result.get("final_response") or "unknown error").strip()
    return (err.splitlines() or ["unknown error"])[0][:300]


async def persist_user_message(runner: "GatewayRunner", st: "SessionState",
                               req: "TurnRequest") -> bool:
    """Make sure the user's message is in the session; True when it is (written now or already)."""
    def write() -> bool:
        # a throwaway session the agent never got to create
        if runner.db.get_session(st.sid) is None:
            return False
        runner.sessions.ensure_user_message(st.sid, req.text, req.mark)
        return True

    try:
        return await asyncio.to_thread(write)
    except Exception as exc:
        log.error("%s: could not persist the user's message: %s", req.key or st.sid, exc)
        return False


async def react(runner: "GatewayRunner", st: "SessionState", req: "TurnRequest",
                result: dict[str, Any], stateless: bool) -> TurnOutcome:
    sid = str(result.get("session_id") or st.sid)
    who = req.key or sid
    if result.get("compression_deferred"):
        log.info("%s: compression deferred (lock held elsewhere); session %s kept", who, sid)
        await persist_user_message(runner, st, req)
        return TurnOutcome("deferred", str(result.get("final_response") or SOFT_DEFERRED), sid,
                           result)
    if result.get("compression_exhausted"):
        why = short_error(result)
        if stateless or req.key is None:
            return TurnOutcome("exhausted", why, sid, result)
        old, new = await runner.rotate(st, req.key, "compression_exhausted", req.user_id)
        log.warning("%s: compression exhausted; session %s -> %s", who, old, new)
        text = ("This conversation grew too long to compress any further, so I've started a "
                "fresh session. "
                f"The previous one is kept and searchable (session {old}). Reason: {why}")
        return TurnOutcome("exhausted", text, new, result, new_session_id=new)
    if result.get("lease_lost"):  # another worker holds the session now: our agent is stale
        log.warning("%s: turn lease lost mid-turn; its writes were refused", who)
        runner.drop_agent(st)
        await persist_user_message(runner, st, req)
        return TurnOutcome("interrupted", LEASE_LOST, sid, result)
    if result.get("interrupted"):
        return TurnOutcome("interrupted", str(result.get("final_response") or ""), sid, result)
    if result.get("failed"):
        log.warning("%s: turn failed: %s", who, short_error(result))
        saved = await persist_user_message(runner, st, req) and not stateless
        runner.drop_agent(st)  # reload a consistent history from the store next time
        # the agent's line says what to do; only whether the message was kept is added here
        if stateless:
            tail = ""
        elif saved:
            tail = " Your message is saved."
        else:
            tail = " Your message could not be saved; please send it again."
        text = f"Sorry, that failed: {short_error(result).rstrip(' .')}.{tail}"
        return TurnOutcome("failed", text, sid, result, saved=saved)
    # a stop without an answer (max_iterations) explains itself in ``error``
    return TurnOutcome("ok", str(result.get("final_response") or result.get("error") or ""), sid,
                       result)
