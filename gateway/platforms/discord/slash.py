"""Our chat commands (``gateway.commands.CHAT_COMMANDS``) as Discord application ("slash")
commands, so Discord lists and completes them. They are registered with one bulk overwrite
(``CommandTree.sync``) when the adapter starts. Running one hands the adapter's handler the
interaction and the command line the user would have typed (``/model gpt-5``); the handler
defers at once (Discord wants an answer within three seconds, and a /usage may take longer)
and sends the command's answer as the interaction's follow-up. Imported only on connect."""
from __future__ import annotations

from typing import Awaitable, Callable, Optional

import discord
from discord import app_commands

from gateway.commands import CHAT_COMMANDS

Handler = Callable[[discord.Interaction, str], Awaitable[None]]


def command_tree(client: discord.Client, handler: Handler) -> app_commands.CommandTree:
    """A tree holding every chat command; the client dispatches interactions to it."""
    tree = app_commands.CommandTree(client)
    for name, (description, arg) in CHAT_COMMANDS.items():
        tree.add_command(_command(name, description, arg, handler))
    return tree


def _command(name: str, description: str, arg: str, handler: Handler) -> app_commands.Command:
    if not arg:
        async def run(interaction: discord.Interaction) -> None:
            await handler(interaction, f"/{name}")

        return app_commands.Command(name=name, description=description, callback=run)

    @app_commands.rename(text=arg)
    async def run_with(interaction: discord.Interaction, text: Optional[str] = None) -> None:
        await handler(interaction, f"/{name} {text or ''}".strip())

    return app_commands.Command(name=name, description=description, callback=run_with)
