"""What the ops write for a term, listed from their own tables: the literal forms ``cloak unveil`` reads
back by looking them up (女表子 -> 婊子, 犭句 -> 狗, 🐴🍚 -> 麻烦, 视歧 -> 歧视, 傻欠 -> 傻缺).

An op's ``candidates(term, 0, len(term))`` lists every single edit it could make in the term; an op that
cloaks a whole term at once (strength ``whole``, ``poster``) or a share of its characters makes any
combination of the single-character ones. So a term's forms are each whole-span candidate, and every
combination of its characters' candidates but the term itself. Forms of very long terms stop at
MAX_FORMS.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from ..ops import make_op
from ..ops.base import Op

MAX_FORMS = 4096  # forms of one term by one op, at most (a 4-character term has 4^4 look-alike forms)
# The ops whose forms are read back by lookup, by the reader that reads them back, and the ops' settings
# whose tables they take: the look-alike op's nearest three, splits one and two levels deep, emoji by
# meaning and by sound, the English table, neighbours swapped; traditional and variant forms that are
# characters of simplified text too (乾, 糸), which the character-by-character pass leaves alone.
LITERAL_OPS = {"split": ("split", "split:depth=2"), "similar": ("similar",), "emoji": ("emoji",),
               "english": ("english",), "shuffle": ("shuffle",), "traditional": ("traditional",),
               "variant": ("variant",)}
# Emoji written with or without the variation selector read the same
VS16 = "\ufe0f"


def forms(op: Op, term: str) -> Iterator[str]:
    """The forms ``op`` could write for ``term`` (not the term itself)."""
    n = len(term)
    per_char: list[list[str]] = [[ch] for ch in term]
    for e in op.candidates(term, 0, n):
        if e.start == e.end:  # an insertion: noise, read back by its own pass
            continue
        if e.end - e.start == 1 and n > 1:
            per_char[e.start].append(e.dst)
        else:
            yield term[:e.start] + e.dst + term[e.end:]
    product = itertools.product(*(dict.fromkeys(options) for options in per_char))
    for combination in itertools.islice(product, MAX_FORMS):
        form = "".join(combination)
        if form != term:
            yield form


def literal_forms(terms: list[str], readers: list[str],
                  normalise: Callable[[str], str] = lambda form: form) -> dict[str, dict[str, str]]:
    """Form -> {term: reader} for the chosen readers' ops (each term's forms, with and without the emoji
    variation selector, as ``normalise`` leaves them: the text they are looked up in has had its
    characters read back first, 軌 of a split 轨 among them); a form that is itself a term is not one."""
    found: dict[str, dict[str, str]] = {}
    known = set(terms)
    for reader in readers:
        for spec in LITERAL_OPS[reader]:
            op = make_op(spec)
            op.prepare()
            for term in terms:
                for form in forms(op, term):
                    for written in dict.fromkeys((form, form.replace(VS16, ""))):
                        written = normalise(written)
                        if written and written not in known and written != term:
                            found.setdefault(written, {}).setdefault(term, reader)
    return found
