"""Dangerous-command decisions for the terminal tool.

Two tiers: *dangerous* commands need the user's approval (or yolo); *blocked* commands are never
run, whatever the approval state, because no legitimate agent task needs them.
Detection is heuristic by design: a false positive costs one approval prompt, so the dangerous
patterns are broad; the blocked check parses the command so it only fires on the real thing.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from tools.context import ToolContext

# A "segment" is what regexes may scan without crossing into the next command.
_SEG = r"[^;&|\n]*"
_WRITE = (r"(?:>>?|\btee\b|\bcp\b|\bmv\b|\brm\b|\bchmod\b|\bchown\b|\bln\b|\bsed\s+-i"
          r"|\btruncate\b|\binstall\b|\brsync\b|\bdd\b)")
_HOME = r"(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]+)"

# (key, compiled regex, reason). The key is what "always allow" remembers.
_DANGEROUS: list[tuple[str, re.Pattern[str], str]] = [
    (key, re.compile(rx, flags), reason)
    for key, rx, flags, reason in [
        ("recursive_delete", rf"\brm\b{_SEG}?\s(?:-[a-zA-Z]*[rR]|--recursive\b)", 0,
         "recursive delete"),
        ("find_delete", rf"\bfind\b{_SEG}\s(?:-delete\b|-exec\s+rm\b)", 0,
         "find that deletes files"),
        ("mkfs", r"\bmkfs(?:\.\w+)?\b", 0, "formats a filesystem"),
        ("dd_device", rf"\bdd\b{_SEG}\bof=/dev/", 0, "dd writing to a device"),
        ("disk_overwrite", r">\s*/dev/(?:sd|hd|nvme|vd|xvd|mmcblk|disk)", 0,
         "overwrites a disk device"),
        ("pipe_to_shell",
         r"\b(?:curl|wget|fetch)\b[^;&\n]*\|\s*(?:sudo\s+)?"
         r"(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node)\b",
         0, "pipes a download straight into an interpreter"),
        ("ssh_write", rf"{_WRITE}{_SEG}{_HOME}/\.ssh\b", 0, "writes into ~/.ssh"),
        ("etc_write", rf"{_WRITE}{_SEG}(?:^|[\s=>'\"])/etc/", 0, "writes to /etc"),
        ("chmod_777_recursive",
         rf"\bchmod\b(?={_SEG}\s(?:-[a-zA-Z]*R|--recursive\b))(?={_SEG}\s0?777\b)", 0,
         "recursive chmod 777"),
        ("git_reset_hard", rf"\bgit\b{_SEG}\breset\b{_SEG}\s--hard\b", 0,
         "git reset --hard discards uncommitted work"),
        ("git_clean", rf"\bgit\b{_SEG}\bclean\b{_SEG}\s-[a-zA-Z]*f", 0,
         "git clean -f deletes untracked files"),
        ("git_force_push",
         rf"\bgit\b{_SEG}\bpush\b{_SEG}\s(?:-f\b|--force\b|--force-with-lease\b)", 0,
         "force push rewrites remote history"),
        ("shutdown",
         r"\b(?:shutdown|reboot|halt|poweroff)\b|\binit\s+[06]\b"
         r"|\bsystemctl\s+(?:poweroff|reboot|halt)\b",
         0, "shuts down or reboots the machine"),
        ("kill_all", r"\bkill\b(?:\s+-\S+)*\s+-1\s*(?:$|[;&|)])", 0, "kills every process you own"),
        ("sql_drop", r"\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA)|TRUNCATE\s+TABLE)\b", re.IGNORECASE,
         "drops or truncates database objects"),
        ("sql_delete_all", r"\bDELETE\s+FROM\s+[\w.\"`]+\s*(?:;|\"|'|$)", re.IGNORECASE,
         "DELETE without WHERE"),
        ("mv_dev_null", rf"\bmv\b{_SEG}\s/dev/null\b", 0, "moves files into /dev/null"),
        ("crontab_remove", r"\bcrontab\s+(?:-\w*\s+)*-r\b", 0, "removes all cron jobs"),
    ]
]

# Top-level paths whose recursive deletion is never allowed ("~" stands for the home directory).
_CRITICAL_PATHS = frozenset(
    "/ ~ /bin /boot /dev /etc /home /lib /lib32 /lib64 /opt /proc /root /sbin /srv /sys /usr /var "
    "/System /Users /Applications /Library".split()
)
_WRAPPERS = frozenset(
    "sudo doas env nohup nice ionice time command exec builtin stdbuf xargs".split())
_SHELLS = frozenset("sh bash zsh dash ksh fish busybox".split())
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "()", "{", "}", "|&", ";;", "\n"})

_FUNC_DEF = re.compile(
    r"(?:function\s+)?(?P<name>[A-Za-z_:.][\w:.]*)\s*\(\s*\)\s*\{(?P<body>[^}]*)\}")
_PERL_BOMB = re.compile(
    r"\bfork\s+while\s+fork\b"
    r"|\bwhile\s*\(?\s*(?:1|true|True)\s*\)?\s*:?\s*\{?\s*(?:os\.)?fork\s*\(\)")


def detect_dangerous(command: str) -> str | None:
    """Why `command` needs approval (every reason, joined), or None when it looks routine."""
    hits = match_all_dangerous(command)
    return "; ".join(reason for _, reason in hits) if hits else None


def match_dangerous(command: str) -> tuple[str, str] | None:
    """(pattern key, reason) of the first dangerous pattern in `command`."""
    hits = match_all_dangerous(command)
    return hits[0] if hits else None


def match_all_dangerous(command: str, _depth: int = 0) -> list[tuple[str, str]]:
    """Every dangerous (key, reason) in `command`, so "always" for one can't let another through."""
    hits = [(key, reason) for key, rx, reason in _DANGEROUS if rx.search(command)]
    if _depth < 3:
        for inner in _nested_commands(command):
            for hit in match_all_dangerous(inner, _depth + 1):
                if hit not in hits:
                    hits.append(hit)
    return hits


def detect_blocked(command: str) -> str | None:
    """Why `command` must never run (not even with yolo), or None."""
    bomb = _find_fork_bomb(command)
    if bomb:
        return bomb
    for argv in _segments(command):
        reason = _blocked_rm(argv)
        if reason:
            return reason
    return None


def request_approval(command: str, reason: str, ctx: "ToolContext") -> bool:
    """Ask (or decide) whether a dangerous command may run. Fails closed on any doubt.

    "always" covers this exact command text, in this session only: the user saw that text and
    nothing else, so a different command with the same risk asks again, and so does a new session.
    """
    if detect_blocked(command):
        return False
    return ask(command, reason, ctx)


def ask(question: str, reason: str, ctx: "ToolContext") -> bool:
    """The approval flow itself: yolo, this session's "always" answers, then the user's callback."""
    if ctx.yolo:
        return True
    key = (ctx.session_id, question)
    with ctx.approval_lock:  # parallel tool calls ask one at a time, and see each other's "always"
        if key in ctx.always_allowed:
            return True
        if ctx.approval_callback is None:
            return False
        try:
            answer = ctx.approval_callback(question, reason)
        except Exception:
            return False
        answer = str(answer or "").strip().lower()
        if answer == "always":
            ctx.always_allowed.add(key)
            return True
        return answer == "once"


MAX_SHOWN_VALUE = 200


def describe_call(name: str, args: dict) -> str:
    """A tool call as the user will read it in the approval question (long values shortened)."""
    parts = []
    for key, value in args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(text) > MAX_SHOWN_VALUE:
            text = f"{text[:MAX_SHOWN_VALUE]}... ({len(text):,} chars)"
        parts.append(f"{key}={text!r}" if isinstance(value, str) else f"{key}={text}")
    return f"{name} {' '.join(parts)}".strip()


def approve_mutation(name: str, args: dict, ctx: "ToolContext") -> None:
    """Consent for a tool that changes something (ctx.mutations "ask"/"deny"); raises ToolError."""
    from tools.context import ToolError

    if ctx.mutations == "deny":
        raise ToolError("refused: changes need the user's consent and this run cannot ask "
                        "(rerun with --yolo to allow them); answer without this tool")
    if not ask(describe_call(name, args), f"{name} changes files or runs commands", ctx):
        raise ToolError("not approved by the user; answer without this tool")


def simple_commands(command: str) -> list[list[str]]:
    """The command line as simple commands (argv lists): quotes removed, ``sudo``/``env``
    wrappers dropped, ``bash -c``/``eval``/``$(…)`` bodies included."""
    return _segments(command)


# --- parsing helpers -----------------------------------------------------------------------


def _tokens(command: str) -> list[str]:
    import shlex

    text = command.replace("`", " ; ").replace("$(", " ; ( ")
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError:  # unbalanced quotes: fall back to a crude split, still worth checking
        return re.split(r"\s+|([;&|()])", text.replace('"', " ").replace("'", " "))


def _segments(command: str, depth: int = 0) -> list[list[str]]:
    """Split a command line into simple commands (argv lists), unwrapping sudo/env/bash -c."""
    out: list[list[str]] = []
    current: list[str] = []
    for tok in _tokens(command):
        if tok is None or tok == "":
            continue
        if tok in _OPERATORS or set(tok) <= set(";&|()"):
            if current:
                out.append(current)
            current = []
        else:
            current.append(tok)
    if current:
        out.append(current)
    result: list[list[str]] = []
    for argv in out:
        argv = _strip_wrappers(argv)
        if not argv:
            continue
        prog = posixpath.basename(argv[0].lstrip("\\"))
        if depth < 4 and prog in _SHELLS and "-c" in argv[1:-1]:
            result.extend(_segments(argv[argv.index("-c", 1) + 1], depth + 1))
        elif depth < 4 and prog == "eval":
            result.extend(_segments(" ".join(argv[1:]), depth + 1))
        else:
            result.append(argv)
    return result


def _strip_wrappers(argv: list[str]) -> list[str]:
    i = 0
    while i < len(argv):
        word = posixpath.basename(argv[i].lstrip("\\"))
        if re.fullmatch(r"[A-Za-z_]\w*=.*", argv[i]):  # VAR=value prefix
            i += 1
        elif word in _WRAPPERS:
            i += 1
            while i < len(argv) and (argv[i].startswith("-") or argv[i].isdigit()):
                i += 1
        elif word == "timeout":
            i += 1
            while i < len(argv) and (argv[i].startswith("-")
                                     or re.fullmatch(r"[\d.]+[smhd]?", argv[i])):
                i += 1
        else:
            break
    return argv[i:]


def _nested_commands(command: str) -> list[str]:
    """Bodies of `bash -c '...'` and friends, which raw-text regexes see only as a quoted string."""
    if "-c" not in command and "eval" not in command:
        return []
    nested = []
    for argv in _segments(command):
        nested.append(" ".join(argv))
    joined = "\n".join(nested)
    return [joined] if joined != command else []


def _normalise_target(target: str) -> str:
    t = re.sub(r"^(?:\$HOME|\$\{HOME\})", "~", target)
    t = re.sub(r"/+", "/", t)
    t = re.sub(r"(?:/\*|/\.\*|/\.)+$", "", t) or ("/" if t.startswith("/") else t)
    if t in ("~/", "~/*", "~/."):
        return "~"
    t = posixpath.normpath(t) if t.startswith("/") else t.rstrip("/") or t
    return "/" if t in ("", "//") else t


def _blocked_rm(argv: list[str]) -> str | None:
    if posixpath.basename(argv[0].lstrip("\\")) != "rm":
        return None
    recursive = no_preserve = False
    targets: list[str] = []
    opts_done = False
    for arg in argv[1:]:
        if not opts_done and arg == "--":
            opts_done = True
        elif not opts_done and arg.startswith("--"):
            recursive |= arg == "--recursive"
            no_preserve |= arg == "--no-preserve-root"
        elif not opts_done and arg.startswith("-") and len(arg) > 1:
            recursive |= "r" in arg or "R" in arg
        else:
            targets.append(arg)
    if not recursive:
        return None
    if no_preserve:
        return "rm --no-preserve-root would wipe the whole filesystem"
    for target in targets:
        norm = _normalise_target(target)
        if norm in _CRITICAL_PATHS:
            where = ("your home directory" if norm == "~"
                     else f"{norm}" if norm != "/" else "the whole filesystem")
            return f"recursive delete of {where} ({target})"
    return None


def _find_fork_bomb(command: str) -> str | None:
    for m in _FUNC_DEF.finditer(command):
        name, body = m.group("name"), m.group("body")
        calls = re.findall(rf"(?<![\w:.]){re.escape(name)}(?![\w:.])", body)
        if calls and "&" in body and re.search(
            rf"(?<![\w:.]){re.escape(name)}(?![\w:.])", command[m.end():]
        ):
            return f"fork bomb (function {name!r} spawns itself in the background)"
    if _PERL_BOMB.search(command):
        return "fork bomb (endless fork loop)"
    return None
