"""Progress bars as every mmcloak command shows them.

``progress=False`` (``-q``) shows none. Otherwise a terminal gets a bar, and a file (a command's output
sent to a log) a plain line now and then: after the first FILE_INTERVAL seconds (at once with
``progress=True``) and every FILE_INTERVAL seconds from then on, without the carriage returns a bar
redraws itself with, so that a long run into a log (``mmbert train --stage 1`` speaking and encoding its
posts) does not say nothing for minutes, and a short one says nothing.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable

from tqdm import tqdm

FILE_INTERVAL = 30.0  # seconds before the first line, and between lines, when stderr is a file


class LogLines(tqdm):
    """A tqdm bar that writes each redraw as a line of its own, and clears nothing when it ends."""

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        if msg == "":  # the bar clearing itself as it ends: a log keeps what it was told
            return False
        self.fp.write((msg or str(self)) + "\n")
        self.fp.flush()
        return True


def progress_bar(iterable: Iterable | None = None, *, progress: bool | None = None, **options) -> tqdm:
    """A tqdm bar (``options`` as tqdm takes them: total, desc, unit, initial ...), gone when it ends."""
    if sys.stderr.isatty():
        return tqdm(iterable, disable=progress is False, mininterval=0.1, leave=False, **options)
    return LogLines(iterable, disable=progress is False, mininterval=FILE_INTERVAL,
                    delay=0 if progress else FILE_INTERVAL, leave=False, **options)
