"""Chat slash commands: /help, /stop, /model answer at once; /new, /usage, /compress wait their turn
behind the chat's queued messages (they take the session lock, so they never run during a turn)."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Optional

if TYPE_CHECKING:  # pragma: no cover
    from gateway.runner import GatewayRunner

Reply = Callable[[str], Awaitable[None]]

STOP_REPLIES = {
    "running": "Stopping the current turn.",
    "pending": "Stopping your last message before it starts.",  # accepted, not started yet
    None: "Nothing is running.",
}
# The commands below, for platforms that list them natively (Discord's slash commands):
# name -> (what it does, its optional argument's name or "").
CHAT_COMMANDS = {
    "new": ("Start a fresh session (the previous one is kept and searchable)", ""),
    "reset": ("Same as /new", ""),
    "usage": ("Tokens used and how full the context is", ""),
    "compress": ("Compress this conversation's context now", "focus"),
    "model": ("Show or change this chat's model", "name"),
    "cron": ("Your scheduled jobs: list, add, remove", "args"),
    "stop": ("Interrupt the running turn", ""),
    "help": ("What Hermes can do here", ""),
}
HELP_TEXT = ("Commands: /new (fresh session), /usage (tokens and context), /compress [focus], "
             "/model [name], /cron (scheduled jobs), /stop (interrupt the running turn), /help")


async def command(runner: "GatewayRunner", key: str, user_id: Optional[str], text: str,
                  reply: Reply, origin: Optional[dict[str, Any]] = None) -> bool:
    """Handle a gateway command; False means 'not ours', and the text goes to the agent."""
    name, _, arg = text.strip().partition(" ")
    name, arg = name.lower(), arg.strip()
    if name == "/help":
        from gateway.skills import help_text

        await reply(HELP_TEXT + await asyncio.to_thread(help_text, runner))
    elif name == "/stop":
        await reply(STOP_REPLIES[runner.stop_turn(key, notice=True)])
    elif name == "/model":
        st = runner.live_state(key)
        if arg:
            runner.models[key] = arg
            if st is not None and st.agent is not None:
                st.agent.model = arg
            await reply(f"Model for this chat set to {arg}.")
        else:
            current = (getattr(st.agent if st else None, "model", None) or runner.models.get(key)
                       or getattr(runner.agent_factory, "default_model", "?"))
            await reply(f"Current model: {current}. Use /model <name> to change it.")
    elif name == "/cron":
        from cron.commands import chat_command
        from gateway.sessions import owner_of
        from agent.tool_policy import run_policy

        cfg = getattr(runner.agent_factory, "config", None)
        platform = (origin or {}).get("platform")  # its platform_toolsets entry, as the chat's
        policy = await asyncio.to_thread(run_policy, cfg, platform) if cfg is not None else None
        await reply(await asyncio.to_thread(chat_command, runner.db, arg, origin, owner_of(origin),
                                            policy))
    elif name in ("/new", "/reset", "/usage", "/compress"):
        runner.spawn(_locked_command(runner, key, user_id, name, arg, reply), None)
    else:
        return False
    return True


async def _locked_command(runner: "GatewayRunner", key: str, user_id: Optional[str], name: str,
                          arg: str, reply: Reply) -> None:
    # after any queued turn of this chat, never during one
    async with runner.hold(key, user_id) as st:
        loop = asyncio.get_running_loop()
        if name in ("/new", "/reset"):
            _old, new = await runner.rotate(st, key, "new_session", user_id)
            await reply(f"Started a new session ({new}). The previous one is kept and searchable.")
            return
        agent = await runner.agent_for(st, key)
        if name == "/usage":
            await reply(format_usage(await loop.run_in_executor(runner.pool, agent.usage), st.sid))
            return
        try:
            res = await loop.run_in_executor(runner.pool, lambda: agent.compress(arg or None))
        except Exception as exc:
            await reply(f"Compression failed: {exc}")
            return
        if res.get("deferred"):
            await reply("Compression is already running for this conversation; try again shortly.")
        else:
            await reply(str(res.get("message") or f"Compressed: {res.get('before_tokens')} -> "
                                                  f"{res.get('after_tokens')} tokens."))


def format_usage(u: dict[str, Any], session_id: Optional[str]) -> str:
    fill = float(u.get("context_fill") or 0.0)
    return (f"Session {session_id}\n"
            f"Tokens: {u.get('prompt_tokens', 0)} prompt + "
            f"{u.get('completion_tokens', 0)} completion "
            f"= {u.get('total_tokens', 0)} over {u.get('api_calls', 0)} API call(s)\n"
            f"Context: {u.get('context_tokens', 0)} / {u.get('context_length', '?')} tokens "
            f"({fill:.0%}), compactions: {u.get('compactions', 0)}")
