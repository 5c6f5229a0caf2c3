"""Character by character, what needs no context to read back: invisible characters, full-width letters
and digits, traditional and variant forms.

- ``zerowidth``: zero-width spaces and joiners, word joiners and byte-order marks are removed, except a
  zero-width joiner inside an emoji sequence (👨‍👩‍👧), where it belongs.
- ``fullwidth``: full-width letters and digits (ｎｍｓｌ) become ASCII; full-width punctuation (，！？),
  which Chinese text is written with, stays.
- ``traditional`` / ``variant``: a character outside GB2312 that OpenCC's tables give as the traditional
  (說), Hong Kong, Taiwan or Japanese form (説) of a GB2312 character becomes that character: the inverse
  of the ``traditional`` and ``variant`` ops, from the same converters. A form that is itself in GB2312
  (乾 for 干) is a character of simplified text too and stays as it is.
"""
from __future__ import annotations

import functools
import unicodedata

from ..common.cache import disk_cached
from ..edits import Edit, apply_edits
from ..hanzi import cjk_chars, gb2312_chars

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
JOINER = "\u200d"
READERS = ("zerowidth", "fullwidth", "traditional", "variant")


@disk_cached
def script_table() -> dict[str, tuple[str, str]]:
    """Traditional or variant form -> (its simplified character, ``traditional`` or ``variant``): first what
    the ``traditional`` and ``variant`` ops write for each GB2312 character (the commoner character wins a
    form two could take), then the rest of what OpenCC's tables take back to one."""
    import opencc

    from ..hanzi import char_frequencies
    from ..ops.script import to_traditional, variant_forms

    simplified = frozenset(gb2312_chars())
    table: dict[str, tuple[str, str]] = {}
    for ch in sorted(simplified, key=lambda c: (-char_frequencies().get(c, 0), c)):
        for form in to_traditional(ch):
            if form not in simplified:
                table.setdefault(form, (ch, "traditional"))
        for form in variant_forms(ch):
            if form not in simplified:
                table.setdefault(form, (ch, "variant"))
    convert = {name: opencc.OpenCC(f"{name}.json").convert for name in ("t2s", "hk2s", "tw2s", "jp2t")}
    for ch in cjk_chars():
        if ch in simplified or ch in table:
            continue
        # standard traditional first; the Hong Kong, Taiwan and Japanese forms are the variants
        for k, back in enumerate((convert["t2s"](ch), convert["hk2s"](ch), convert["tw2s"](ch),
                                  convert["t2s"](convert["jp2t"](ch)))):
            if len(back) == 1 and back in simplified:
                table[ch] = (back, "traditional" if k == 0 else "variant")
                break
    return table


@functools.cache
def _table(readers: frozenset[str]) -> dict[int, tuple[str, str]]:
    """Code point -> (what it becomes, the reader that reads it) for the chosen readers."""
    table: dict[int, tuple[str, str]] = {}
    if "zerowidth" in readers:
        table.update({ord(c): ("", "zerowidth") for c in ZERO_WIDTH})
    if "fullwidth" in readers:
        for c in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz":
            table[ord(c) + 0xFEE0] = (c, "fullwidth")
    if readers & {"traditional", "variant"}:
        table.update({ord(form): found for form, found in script_table().items() if found[1] in readers})
    return table


@functools.cache
def _translation(readers: frozenset[str]) -> dict[int, str]:
    return {c: new for c, (new, _) in _table(readers).items()}


def _pictographic(ch: str) -> bool:
    return unicodedata.category(ch) == "So" or "\U0001f000" <= ch <= "\U0001faff" or ch == "\ufe0f"


def normalise(text: str, readers: frozenset[str]) -> tuple[str, list[Edit]]:
    """``text`` with what ``readers`` read back changed, and the edits (``unveil:READER``) that do it."""
    if not readers or text.translate(_translation(readers)) == text:
        return text, []
    table = _table(readers)
    edits = []
    for i, ch in enumerate(text):
        found = table.get(ord(ch))
        if found is None:
            continue
        if ch == JOINER and 0 < i < len(text) - 1 and _pictographic(text[i - 1]) and _pictographic(text[i + 1]):
            continue
        edits.append(Edit(f"unveil:{found[1]}", i, i + 1, ch, found[0]))
    return (apply_edits(text, edits), edits) if edits else (text, [])
