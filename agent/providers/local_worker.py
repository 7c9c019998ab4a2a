"""The embedded model's child process:
``python -m agent.providers.local_worker --fd N --model PATH``.

It loads the model once, says ``ready`` with what it knows (window, CPU features), then answers
requests one at a time over the socket it was handed. A reader thread takes the parent's messages,
so a ``cancel`` stops the running generation at its next token; end-of-file on the socket means
the parent is gone, and the child exits at once. SIGINT is ignored: Ctrl+C in the terminal is the
parent's to handle (it sends ``cancel``).

``--probe`` loads the model, generates one token and prints one JSON line: ``hermes doctor`` runs
it in a throwaway child to learn whether this CPU can run this build, without risking itself.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import signal
import socket
import sys
import threading
from typing import Any, Optional

from agent.providers.local_wire import PeerGone, Pipe

LOG_PREFIX = "hermes-local-model "


def _args(argv: Optional[list[str]]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="local_worker")
    ap.add_argument("--fd", type=int, help="this end of the parent's socket pair")
    ap.add_argument("--model", required=True)
    ap.add_argument("--n-ctx", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--probe", action="store_true", help="load, generate one token, print JSON")
    return ap.parse_args(argv)


def _load(args: argparse.Namespace) -> Any:
    from agent.providers.local_engine import Engine

    return Engine(args.model, args.n_ctx or None, args.threads, args.verbose)


def probe(args: argparse.Namespace) -> int:
    engine = _load(args)
    out = {**engine.info(), **engine.generate_one()}
    print(json.dumps(out), flush=True)
    return 0


class _Inbox:
    """The parent's messages, read on a thread of their own: requests queue up, cancels act now."""

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.requests: "queue.Queue[dict]" = queue.Queue()
        self.current: Optional[int] = None
        self.cancelled = threading.Event()
        self._gone: set = set()  # ids cancelled, possibly before they started
        self._lock = threading.Lock()
        threading.Thread(target=self._read, name="local-worker-inbox", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                msg = self.pipe.recv()
            except PeerGone:
                os._exit(0)  # the parent is gone: nobody is left to answer
            if msg.get("op") == "cancel":
                self._cancel(msg.get("id"))
            elif msg.get("op") == "create":
                self.requests.put(msg)

    def _cancel(self, rid: Any) -> None:
        with self._lock:
            if rid == self.current:
                self.cancelled.set()
            elif isinstance(rid, int) and rid > (self.current or 0):  # not started yet
                self._gone.add(rid)

    def begin(self, rid: Any) -> None:
        """``rid`` runs now: its cancel may already have come."""
        with self._lock:
            self.current = rid
            self.cancelled.clear()
            if rid in self._gone:
                self._gone.discard(rid)
                self.cancelled.set()


def _answer(engine: Any, pipe: Pipe, inbox: _Inbox, msg: dict) -> None:
    from agent.providers.local_engine import Overflow, Request

    rid = msg.get("id")
    try:
        req = Request(**msg["request"])
        for out in engine.run(req, inbox.cancelled.is_set):
            pipe.send({"id": rid, **out})
        pipe.send({"id": rid, "end": True})
    except Overflow as exc:
        pipe.send({"id": rid, "error": "overflow", "limit": exc.limit, "requested": exc.requested})
    except PeerGone:
        raise
    except Exception as exc:  # a bad request must not end the child: report it, take the next
        pipe.send({"id": rid, "error": "failed", "message": f"{type(exc).__name__}: {exc}"})


def serve(args: argparse.Namespace) -> int:
    pipe = Pipe(socket.socket(fileno=args.fd))
    try:
        engine = _load(args)
    except Exception as exc:
        pipe.send({"fatal": f"{type(exc).__name__}: {exc}"})
        return 1
    pipe.send({"ready": True, **engine.info()})
    inbox = _Inbox(pipe)
    while True:
        msg = inbox.requests.get()
        inbox.begin(msg.get("id"))
        try:
            _answer(engine, pipe, inbox, msg)
        except PeerGone:
            return 0


def main(argv: Optional[list[str]] = None) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # warnings go to stderr, which the parent reads and logs under its own logger
    logging.basicConfig(level=logging.WARNING, format=f"{LOG_PREFIX}%(levelname)s %(message)s")
    args = _args(argv)
    if args.probe:
        return probe(args)
    if args.fd is None:
        print("local_worker: --fd is required (it is started by the embedded provider)",
              file=sys.stderr)
        return 2
    return serve(args)


if __name__ == "__main__":
    raise SystemExit(main())
