"""MkDocs hooks: the results pages are made from bench/results/*.json before every build (docs/gen_results.py)."""
from __future__ import annotations

import sys
from pathlib import Path


def on_pre_build(config) -> None:
    """Regenerate docs/results/ (a page is rewritten only when its JSON changed it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gen_results import OUT, README, RESULTS, write  # noqa: PLC0415 (beside this file, not a package)

    write(RESULTS, OUT, README)
