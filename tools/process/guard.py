"""The parent of every background process: it dies with Hermes, and takes its group with it.

Run as ``python -S -E guard.py FD -- ARGV...`` in a new session (so it leads a process group).
FD is the read end of a pipe whose write end only the Hermes process holds: when Hermes exits or
is killed (SIGKILL included: the kernel closes its descriptors), the read returns end-of-file
and the guard stops the whole group: TERM, then KILL after a grace period. Otherwise it waits
for the command and exits with its status (128 + N for a signal), so the owner reads the
command's exit code as the guard's.

Standard library only, no project imports: it must start fast and work under a sandbox.
"""
import os
import signal
import subprocess
import sys
import threading
import time

GRACE_SECONDS = 2.0


def _watch_owner(fd: int, child: subprocess.Popen) -> None:
    try:
        while os.read(fd, 1024):
            pass
    except OSError:
        pass
    if child.poll() is not None:
        return
    try:
        os.killpg(0, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + GRACE_SECONDS
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(0, signal.SIGKILL)  # the guard goes too: nobody is left to report to


def main(argv: list) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: guard.py FD -- COMMAND...\n")
        return 2
    fd = int(argv[1])
    # TERM sent to the group is for the command; the guard outlives it to report its status
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        child = subprocess.Popen(argv[3:], restore_signals=True)
    except OSError as exc:
        sys.stderr.write(f"cannot start {argv[3]}: {exc}\n")
        return 127
    os.set_inheritable(fd, False)
    threading.Thread(target=_watch_owner, args=(fd, child), daemon=True).start()
    while True:
        try:
            code = child.wait()
            break
        except InterruptedError:
            continue
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
