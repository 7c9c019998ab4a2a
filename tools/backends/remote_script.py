"""The shell scripts a remote backend (ssh, docker) runs, and the parsing of what they print.

Pure on purpose: quoting and marker parsing are where remote execution goes wrong, so they are
tested without a server. A command runs in a bash that records its pid (so a timeout can kill
the remote process group, which an ssh client's death alone does not) and, on exit, prints a
marker line with the directory it ended in (so a ``cd`` carries over to the next call, as in a
persistent shell).
"""
from __future__ import annotations

import posixpath
import shlex
from typing import Optional

MARK = "__HERMES_CWD_{token}__="
PID_DIR = "/tmp"


def pid_file(token: str) -> str:
    return f"{PID_DIR}/.hermes-{token}.pid"


def join(cwd: str, path: Optional[str]) -> str:
    """``path`` resolved against the remote working directory (``~`` left to the shell)."""
    if not path:
        return cwd
    if path.startswith("/") or path.startswith("~"):
        return posixpath.normpath(path) if path.startswith("/") else path
    return posixpath.normpath(posixpath.join(cwd, path))


def _cd(path: str) -> str:
    if path == "~" or path.startswith("~/"):  # let the remote shell expand the home directory
        rest = path[2:]
        return f'cd -- "$HOME"/{shlex.quote(rest)}' if rest else 'cd -- "$HOME"'
    return f"cd -- {shlex.quote(path)}"


def command_script(command: str, cwd: str, token: str, marker: bool = True) -> str:
    """A bash script that runs ``command`` in ``cwd`` with stderr merged into stdout, leaving its
    pid in ``pid_file(token)`` and (``marker``) the final directory in a last marker line."""
    pidf = shlex.quote(pid_file(token))
    mark = shlex.quote(MARK.format(token=token))
    on_exit = f'__hermes_rc=$?; rm -f {pidf}; '
    if marker:
        on_exit += f'printf "%s%s\\n" {mark} "$PWD"; '
    return "\n".join([
        "exec 2>&1",
        f"echo $$ > {pidf}",
        f"{_cd(cwd)} || {{ rm -f {pidf}; exit 1; }}",
        f"trap {shlex.quote(on_exit + 'exit $__hermes_rc')} EXIT",
        f"eval {shlex.quote(command)}",
    ])


def kill_script(token: str) -> str:
    """Stop the process group of the command that wrote ``pid_file(token)``: TERM, then KILL."""
    pidf = shlex.quote(pid_file(token))
    return (f'p=$(cat {pidf} 2>/dev/null) || exit 0; [ -n "$p" ] || exit 0; '
            'kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; '
            'for i in 1 2 3 4 5 6 7 8 9 10; do '
            'kill -0 "$p" 2>/dev/null || exit 0; sleep 0.2; done; '
            f'kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; rm -f {pidf}')


def split_marker(output: str, token: str) -> tuple[str, Optional[str]]:
    """(the command's output, the directory it ended in or None when no marker came back)."""
    mark = MARK.format(token=token)
    idx = output.rfind(mark)
    if idx < 0:
        return output, None
    rest = output[idx + len(mark):]
    cwd = rest.split("\n", 1)[0].strip()
    return output[:idx], (cwd or None)


def stat_script(path: str) -> str:
    q = _quoted_path(path)
    return f"if [ -d {q} ]; then echo dir; elif [ -e {q} ]; then echo file; else echo none; fi"


def read_script(path: str, limit: int) -> str:
    return f"head -c {int(limit)} -- {_quoted_path(path)}"


def write_script(path: str) -> str:
    q = _quoted_path(path)
    return f'mkdir -p -- "$(dirname -- {q})" && cat > {q}'


def _quoted_path(path: str) -> str:
    if path == "~" or path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:]) if path != "~" else '"$HOME"'
    return shlex.quote(path)
