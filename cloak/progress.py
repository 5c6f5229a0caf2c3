"""Progress bars as every mmcloak command shows them.

``progress=False`` (``-q``) shows none; ``None``, the default, shows one only when stderr is a terminal,
so a command whose output goes to a log writes no carriage-return lines into it; ``True`` shows one even
into a file, redrawn at most every 30 s there.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable

from tqdm import tqdm

FILE_INTERVAL = 30.0  # seconds between redraws when stderr is a file


def progress_bar(iterable: Iterable | None = None, *, progress: bool | None = None, **options) -> tqdm:
    """A tqdm bar (``options`` as tqdm takes them: total, desc, unit, initial ...), gone when it ends."""
    terminal = sys.stderr.isatty()
    return tqdm(iterable, disable=progress is False or (progress is None and not terminal),
                mininterval=0.1 if terminal else FILE_INTERVAL, leave=False, **options)
