"""Named searches: common combinations of goal, constraints, transformation and search method (TextAttack's
attack recipes, Morris et al. 2020), chosen by ``attacks evaluate --attacks search --recipe NAME`` or
``SearchAttack.from_recipe(NAME)``.

A recipe sets the search's options (``attacks evaluate``'s names: ``ops``, ``importance``, ``stopwords``,
``goal``, ``search_method``, ``constraint``, ...); an option given as well, away from its default, wins.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from cloak.common.params import unknown_key


@dataclasses.dataclass(frozen=True)
class Recipe:
    name: str
    summary: str
    options: Mapping[str, Any]


RECIPES = {r.name: r for r in (
    Recipe("greedy-wir", "the default: untargeted, greedy over words ranked by importance, every op", {}),
    Recipe("textattack-chinese", "TextAttack's Chinese recipe: homophone and look-alike swaps, stop words left "
           "alone, words ranked by deletion", {"ops": "homophone,similar", "stopwords": "zh",
                                                "importance": "deletion"}),
    Recipe("false-positive", "benign posts edited until the detector flags them (targeted at label 1)",
           {"goal": "targeted:label=1"}),
    Recipe("poster", "as posters cloak: only the lexicon's target terms, at most two edits",
           {"constraint": ("target-terms", "max-edits:k=2")}),
    Recipe("subtle", "few and small edits: at most three, the text 90% like the post",
           {"constraint": ("max-edits:k=3", "similarity:min=0.9")}),
    Recipe("beam", "beam search, four texts kept", {"search_method": "beam:width=4"}),
)}


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise unknown_key(name, sorted(RECIPES), "--recipe", kind="recipe")
    return RECIPES[name]
