"""Slash commands: the table, parsing and "did you mean" suggestions.

Pure on purpose (no terminal, no agent): the REPL, its completer and the tests all read the same
table, so a command cannot exist in /help but not in completion, or the other way round.
"""
from __future__ import annotations

import difflib
import textwrap
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str
    usage: str = ""
    aliases: tuple[str, ...] = ()


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "list the commands"),
    SlashCommand("new", "start a fresh session (the old one stays in the store)",
                 aliases=("reset",)),
    SlashCommand("model", "show or switch the model", "[name]"),
    SlashCommand("compress", "compress the conversation now, optionally focused on a topic",
                 "[focus]"),
    SlashCommand("usage", "tokens this session, context fill, compactions"),
    SlashCommand("history", "show the conversation so far"),
    SlashCommand("undo", "drop your last message and everything after it"),
    SlashCommand("retry", "undo and send your last message again"),
    SlashCommand("title", "show or set this session's title", "[name]"),
    SlashCommand("sessions", "list recent sessions"),
    SlashCommand("resume", "continue an earlier session", "<id|title>"),
    SlashCommand("tools", "list the tools the agent can use"),
    SlashCommand("image", "attach an image to your next message", "<path>"),
    SlashCommand("mcp", "MCP servers: status and tool counts"),
    SlashCommand("cron", "scheduled jobs: list, add, pause, resume, remove, run, runs",
                 "[list|add <schedule> <prompt>|pause|resume|remove|run|runs <job>]"),
    SlashCommand("ps", "this session's background processes"),
    SlashCommand("rollback", "list checkpoints; N: show what restoring N changes, then restore",
                 "[N]"),
    SlashCommand("yolo", "toggle auto-approval of dangerous commands"),
    SlashCommand("quit", "leave hermes", aliases=("exit", "q")),
)

_BY_NAME: dict[str, SlashCommand] = {}
for _cmd in COMMANDS:
    _BY_NAME[_cmd.name] = _cmd
    for _alias in _cmd.aliases:
        _BY_NAME[_alias] = _cmd


@dataclass(frozen=True)
class ParsedSlash:
    """What the user typed: `name` as written (lower-cased), `arg` the rest, stripped."""

    name: str
    arg: str

    @property
    def command(self) -> Optional[SlashCommand]:
        return _BY_NAME.get(self.name)


def is_slash(line: str) -> bool:
    """A line is a command when it starts with '/' — but '//' escapes a literal leading slash."""
    s = line.lstrip()
    return s.startswith("/") and not s.startswith("//")


def unescape(line: str) -> str:
    """'//etc is...' is sent to the model as '/etc is...'."""
    s = line.lstrip()
    return s[1:] if s.startswith("//") else line


def parse(line: str) -> Optional[ParsedSlash]:
    """Split '/name rest of line' into its parts; None for a normal message."""
    if not is_slash(line):
        return None
    body = line.strip()[1:]
    name, _, arg = body.partition(" ")
    if "\n" in name:
        name, _, more = name.partition("\n")
        arg = (more + " " + arg).strip()
    return ParsedSlash(name.strip().lower(), arg.strip())


def lookup(name: str) -> Optional[SlashCommand]:
    return _BY_NAME.get(name.lower().lstrip("/"))


def suggest(name: str, n: int = 3, skills: Sequence[str] = ()) -> list[str]:
    """Close matches for a mistyped command (or skill), best first; prefixes count as close."""
    name = name.lower().lstrip("/")
    names = sorted(set(_BY_NAME) | set(skills))
    out = [m for m in names if name and m.startswith(name)]
    for m in difflib.get_close_matches(name, names, n=n, cutoff=0.5):
        if m not in out:
            out.append(m)
    canon: list[str] = []
    for m in out:
        c = _BY_NAME[m].name if m in _BY_NAME else m
        if c not in canon:
            canon.append(c)
    return canon[:n]


def unknown_message(name: str, skills: Sequence[str] = ()) -> str:
    """The one line shown for an unknown command (the skills' names count as commands too)."""
    sugg = suggest(name, skills=skills)
    hint = f" Did you mean {', '.join('/' + s for s in sugg)}?" if sugg else ""
    return f"Unknown command /{name}.{hint} Type /help for the list."


def completions(text: str, skills: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """(completion, help) pairs for the text typed so far; only while typing the command word.
    ``skills`` are (name, description) pairs of invocable skills, offered after the commands."""
    if not text.startswith("/") or " " in text:
        return []
    prefix = text[1:].lower()
    out = [("/" + c.name, c.help) for c in COMMANDS if c.name.startswith(prefix)]
    return out + [("/" + n, d) for n, d in skills if n.startswith(prefix) and n not in _BY_NAME]


HEAD_COLUMN = 24  # a longer command head puts its description on the line below


def _row(head: str, text: str, col: int, width: int) -> list[str]:
    """One /help entry, its description wrapped at word boundaries to ``width``, aligned."""
    indent = " " * (col + 4)
    if len(head) > col:
        return ["  " + head] + textwrap.wrap(text, width, initial_indent=indent,
                                             subsequent_indent=indent)
    return textwrap.wrap(text, width, initial_indent=f"  {head.ljust(col)}  ",
                         subsequent_indent=indent) or [f"  {head}"]


def help_lines(skills: Sequence[tuple[str, str]] = (), max_skills: int = 30,
               width: int = 100) -> list[str]:
    """Rows for /help, aligned and wrapped to ``width`` (the terminal's); then the skills (a
    command of the same name wins)."""
    width = max(40, width - 1)  # a full last column makes some terminals wrap early
    rows = []
    for c in COMMANDS:
        head = f"/{c.name}" + (f" {c.usage}" if c.usage else "")
        alias = f" (also {', '.join('/' + a for a in c.aliases)})" if c.aliases else ""
        rows.append((head, c.help + alias))
    skill_rows = [(f"/{n} [text]", d) for n, d in skills if n not in _BY_NAME]
    col = min(HEAD_COLUMN, max(len(h) for h, _ in rows + skill_rows[:max_skills]))
    lines = [line for h, t in rows for line in _row(h, t, col, width)]
    if skill_rows:
        lines.append("Skills (your message is sent with the skill attached):")
        lines += [line for h, t in skill_rows[:max_skills] for line in _row(h, t, col, width)]
        if len(skill_rows) > max_skills:
            lines.append(f"  … and {len(skill_rows) - max_skills} more (`hermes skills list`)")
    for note in ("Enter sends; Alt+Enter (or Esc then Enter) adds a new line; '//' starts a "
                 "message with '/'.", "Ctrl+C interrupts a running reply; Ctrl+C twice at an "
                 "empty prompt or Ctrl+D quits."):
        lines += textwrap.wrap(note, width, initial_indent="  ", subsequent_indent="  ")
    return lines
