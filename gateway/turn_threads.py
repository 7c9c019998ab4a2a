"""The threads turns run on, started without ever making the event loop wait.

Why not ``ThreadPoolExecutor``: it starts a new thread inside ``submit()`` and waits until that
thread runs. In a burst of new turns every new thread first queues for the GIL behind the busy ones,
so each ``submit`` from the event loop blocked it for milliseconds: a 100-turn burst on a fresh
process waited ~0.5 s before the gateway even read the requests. Here ``submit`` only queues the
work; a spawner thread starts workers whenever the queue holds more work than there are idle workers
(up to ``max_workers``), and ``prestart`` starts some ahead of time (the warm-up). Workers are kept
once made.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable, Optional


class TurnThreads(Executor):
    def __init__(self, max_workers: int, name: str = "turn") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers, self.name = max_workers, name
        self._work: \
            "queue.SimpleQueue[Optional[tuple[Future[Any], Callable[..., Any], tuple, dict]]]" = \
            queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0
        self._wanted = 0  # workers asked of the spawner and not started yet
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._wake = threading.Event()
        self._spawner = threading.Thread(target=self._spawn_loop, name=f"{name}-spawner",
                                         daemon=True)
        self._spawner.start()

    # -- Executor ----------------------------------------------------------------------------------
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> "Future[Any]":
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new turns after shutdown")
            self._work.put((future, fn, args, kwargs))
            self._ask_for_workers()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            workers = self._workers
        if cancel_futures:
            while True:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in range(workers):
            self._work.put(None)
        self._wake.set()
        if wait:
            self._spawner.join()  # no thread starts after this, so the list below is complete
            for thread in list(self._threads):
                thread.join()

    # -- sizing ------------------------------------------------------------------------------------
    def prestart(self, n: int) -> None:
        """Have ``n`` workers (at most ``max_workers``) ready before the first turn needs one."""
        with self._lock:
            self._wanted = max(self._wanted, min(n, self.max_workers) - self._workers)
        self._wake.set()

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"threads": self._workers, "idle": self._idle, "waiting": self._work.qsize()}

    def _ask_for_workers(self) -> None:
        """Caller holds the lock: one more worker when queued work outnumbers idle and coming
        workers."""
        if (self._work.qsize() > self._idle + self._wanted
                and self._workers + self._wanted < self.max_workers):
            self._wanted += 1
            self._wake.set()

    def _spawn_loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    if self._closed or self._wanted <= 0:
                        break
                    self._wanted -= 1
                    self._workers += 1
                    n = self._workers
                thread = threading.Thread(target=self._work_loop, name=f"{self.name}_{n}",
                                          daemon=True)
                thread.start()
                self._threads.append(thread)  # only started threads: shutdown joins these
            if self._closed:
                return

    def _work_loop(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            item = self._work.get()
            with self._lock:
                self._idle -= 1
                if item is not None:
                    self._ask_for_workers()  # more queued behind this one: grow before it is needed
            if item is None:
                with self._lock:
                    self._workers -= 1
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
                future.set_exception(exc)
            else:
                future.set_result(result)
