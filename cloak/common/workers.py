"""Work spread over worker processes: results in input order, a bounded number of tasks in flight, and
a stop that never kills a worker while it hands back a result.

``multiprocessing.Pool.terminate()`` kills workers wherever they are. One killed while writing its
result to the pool's result queue leaves that queue's lock held, and the pool's own shutdown then waits
on the lock for ever (``cloak perturb --workers 2`` hung after SIGTERM, about one run in ten, in CI and
here). So the workers ignore Ctrl-C and SIGTERM (the parent decides when to stop), and a stop is
orderly: no new task starts, the tasks under way finish, the workers exit.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

STOP_SECONDS = 120  # a stop waits this long for the tasks under way, then kills the workers

_stop_event: Any = None
_func: Callable | None = None


def _start(func: Callable, stop, initializer: Callable | None, initargs: tuple) -> None:
    global _stop_event, _func
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _stop_event, _func = stop, func
    if initializer is not None:
        initializer(*initargs)


def _run(item: Any) -> Any:
    if _stop_event.is_set():  # stopping: tasks not yet started are skipped
        return None
    return _func(item)  # type: ignore[misc]


def threads_per_worker(workers: int) -> int:
    """The CPU threads each of ``workers`` processes gets, so that workers x threads = the usable cores."""
    return max(1, len(os.sched_getaffinity(0)) // workers)


def ordered_map(func: Callable, items: Iterable, workers: int, initializer: Callable | None = None,
                initargs: tuple = (), start_method: str | None = None) -> Iterator:
    """``func(item)`` for each item, computed by ``workers`` processes, yielded in input order, with at
    most ``2 * workers`` items in flight (constant memory). ``initializer(*initargs)`` runs once in each
    worker. Closing the generator (an exception, Ctrl-C) stops the workers in order."""
    context = multiprocessing.get_context(start_method)
    stop = context.Event()
    pool = context.Pool(workers, _start, (func, stop, initializer, initargs))
    pending: deque = deque()
    try:
        for item in items:
            pending.append(pool.apply_async(_run, (item,)))
            if len(pending) >= 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
    finally:
        stop.set()
        pool.close()
        deadline = time.monotonic() + STOP_SECONDS
        for result in pending:
            result.wait(max(0.0, deadline - time.monotonic()))
        if all(result.ready() for result in pending):
            pool.join()
        else:  # a worker died or hangs: nothing orderly is left to do
            for process in multiprocessing.active_children():
                process.kill()
            pool.terminate()
