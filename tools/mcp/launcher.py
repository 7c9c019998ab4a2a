"""Runs a stdio MCP server so that it never outlives Hermes.

    python -I -S launcher.py PPID CMD [ARG...]

The SDK spawns the server itself (in a new session), so Hermes cannot set anything in the child
before `exec`; this tiny supervisor does. It asks the kernel for a signal when its parent dies
(Linux `PR_SET_PDEATHSIG`; elsewhere it polls its parent id), forks the server into its own
process group, and when the server exits or Hermes goes away (REPL exit, `-z`, SIGTERM, even
SIGKILL) it kills the whole group, so helpers the server started (`npx` -> `node`) go too.
Standard library only, nothing from Hermes: it must start in milliseconds.
"""
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1


def _die_with_parent(sig: int) -> bool:
    """Ask the kernel to send `sig` when the parent thread dies; False where that is unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _kill_group(signum: int = 0, frame: object = None) -> None:
    """Hermes is gone (or told the group to stop): nothing of this server may survive."""
    os.killpg(0, signal.SIGKILL)


def _exit_status(status: int) -> int:
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 128 + (os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0)


def main() -> None:
    if len(sys.argv) < 3:
        sys.stderr.write("usage: launcher.py PARENT_PID COMMAND [ARG...]\n")
        os._exit(2)
    parent, argv = int(sys.argv[1]), sys.argv[2:]
    if os.getpgrp() != os.getpid():  # killing "our group" must never mean Hermes' own group
        os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, _kill_group)
    watched = _die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:  # Hermes died before the request above took effect
        _kill_group()
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _die_with_parent(signal.SIGKILL)  # should the supervisor itself be killed
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"hermes mcp launcher: cannot run {argv[0]!r}: {exc.strerror}\n")
            os._exit(127)
    # The pipes belong to the server: Hermes must see EOF when the server exits, not when we do.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    while True:
        if watched:
            _, status = os.waitpid(child, 0)
            break
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break
        if os.getppid() != parent:
            _kill_group()
        time.sleep(0.5)
    # The server is done: whatever it left behind in the group goes with it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)
    except OSError:
        pass
    os._exit(_exit_status(status))


if __name__ == "__main__":
    main()
