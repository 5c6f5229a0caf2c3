"""The closing table every benchmark prints: one row per figure (name, value, note)."""
from __future__ import annotations


def print_summary(rows: list[tuple[str, str, str]], out, seconds: float, value_width: int = 16) -> None:
    width = max(len(r[0]) for r in rows)
    print()
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:<{value_width}}  {note}")
    print(f"\nwrote {out} in {seconds:.0f} s")
