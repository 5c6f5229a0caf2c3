"""How a search attack walks a post's words (TextAttack's search methods, Morris et al. 2020).

A search method gets one post's :class:`Problem` (the words it may edit, each with the transformation's
candidates, the goal and the constraints), the words' order (ranked by importance) and the queries the
ranking took, and is a generator: it yields the texts it wants the victim to score, receives their
probabilities (n, n_classes), and returns the post's :class:`~attacks.attack.Outcome`. It never asks for
more than the query budget, and asks nothing of a candidate the constraints refuse.

- ``greedy`` (the default; TextAttack's ``GreedyWordSwapWIR``): at each word in turn, the candidates are
  scored ``chunk`` at a time, the most plausible first, until one reaches the goal; the one closest to the
  goal is kept if it brings the post closer than it was. It stops at the goal, when the words run out, or
  when the next query would pass the budget.
- ``beam:width=W`` (after TextAttack's ``BeamSearch``): the ``W`` texts closest to the goal are kept; at each
  word in turn, each of them is extended by each candidate, all scored at once, and the ``W`` best of the
  kept and the extended texts go on (leaving a word alone is one of the options). TextAttack's beam extends
  every word of every text at each step; on a budget of a few hundred queries that spends the budget in
  the first step, so ours walks the words in the importance order, as the greedy search does.

A method of your own is a dataclass registered with ``@SEARCH_METHODS.register``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from typing import Protocol

import numpy as np

from cloak import apply_edits
from cloak.edits import Edit
from cloak.common.params import Interval, Named, Registry

from .attack import Outcome
from .constraints import Constraint
from .goals import Goal, answered

Span = tuple[int, int]
SEARCH_METHODS = Registry("search method")
DEFAULT_METHOD = "greedy"
Walk = Generator[list[str], np.ndarray, Outcome]


@dataclasses.dataclass
class Problem:
    """One post as a search sees it: its text and gold label, the victim's clean probabilities, the words it
    may edit (``spans``) with each one's candidates, the goal, the constraints on what it makes, the query
    budget, and how its words were ranked (``ranked``: deletion, gradient or none)."""

    text: str
    label: int
    clean: np.ndarray
    spans: list[Span]
    candidates: dict[Span, list[Edit]]
    goal: Goal
    constraints: Sequence[Constraint]
    budget: int
    ranked: str

    def score(self, probs: np.ndarray) -> np.ndarray:
        return self.goal.score(probs, self.label)

    def reached(self, probs: np.ndarray) -> bool:
        """Whether a text meets the goal; an unanswered one (NaN) does not, whatever the goal says of it."""
        return bool(answered(probs) and self.goal.reached(probs, self.label))

    def allowed(self, edits: list[Edit], candidates: list[Edit]) -> list[Edit]:
        """The candidates whose text (``edits`` and the candidate) the constraints let stand."""
        return [c for c in candidates if all(k.allows(self.text, with_edit(edits, c)) for k in self.constraints)]

    def outcome(self, edits: list[Edit], probs: np.ndarray, queries: int) -> Outcome:
        status = "success" if edits and self.reached(probs) else "failure"
        return Outcome(apply_edits(self.text, edits), [e.to_dict() for e in edits], probs, changed=bool(edits),
                       queries=queries, details={"importance": self.ranked, "status": status})


class SearchMethod(Protocol):
    name: str

    def spec(self) -> str: ...

    def walk(self, problem: Problem, order: Sequence[int], queries: int) -> Walk: ...


@SEARCH_METHODS.register
@dataclasses.dataclass
class Greedy(Named):
    """Greedy word substitution in the importance order (see the module docstring)."""

    name = "greedy"
    chunk: int = 4
    _parameter_constraints = {"chunk": Interval(int, 1)}

    def walk(self, problem: Problem, order: Sequence[int], queries: int) -> Walk:
        text, edits = problem.text, []
        best, probs = float(problem.score(problem.clean)), problem.clean
        for i in order:
            allowed = problem.allowed(edits, problem.candidates[problem.spans[i]])
            if not allowed:
                continue  # the constraints refuse every candidate here: another word may do
            candidates = allowed[:problem.budget - queries]
            if not candidates:
                break  # the budget is spent
            found = None  # (score, candidate, probabilities) of the word's best so far
            for at in range(0, len(candidates), self.chunk):
                chunk = candidates[at:at + self.chunk]
                scored = yield [apply_edits(text, with_edit(edits, c)) for c in chunk]
                queries += len(chunk)
                scores = problem.score(scored)
                j = int(np.argmax(scores))
                if found is None or scores[j] > found[0]:
                    found = (float(scores[j]), chunk[j], scored[j])
                if problem.reached(found[2]):
                    break  # the goal: the rest of the word's candidates need not be asked
            if found[0] > best:
                edits = with_edit(edits, found[1])
                best, probs = found[0], found[2]
                if problem.reached(probs):
                    break
        return problem.outcome(edits, probs, queries)


@SEARCH_METHODS.register
@dataclasses.dataclass
class Beam(Named):
    """Beam search over the words in the importance order, ``width`` texts kept (see the module docstring)."""

    name = "beam"
    width: int = 4
    _parameter_constraints = {"width": Interval(int, 1)}

    def walk(self, problem: Problem, order: Sequence[int], queries: int) -> Walk:
        beam = [(float(problem.score(problem.clean)), [], problem.clean)]  # (score, edits, probabilities)
        for i in order:
            word = problem.candidates[problem.spans[i]]
            grown = [with_edit(edits, c) for _, edits, _ in beam for c in problem.allowed(edits, word)]
            if not grown:
                continue
            grown = grown[:problem.budget - queries]
            if not grown:
                break  # the budget is spent
            scored = yield [apply_edits(problem.text, edits) for edits in grown]
            queries += len(grown)
            scores = problem.score(scored)
            pool = beam + [(float(s), edits, p) for s, edits, p in zip(scores, grown, scored)]
            # the closest first; a tie keeps the text found first (a kept one before its extensions)
            beam = sorted(pool, key=lambda item: -item[0])[:self.width]
            done = [item for item in pool if item[1] and problem.reached(item[2])]
            if done:
                beam = [max(done, key=lambda item: item[0])]
                break
        _, edits, probs = beam[0]
        return problem.outcome(edits, probs, queries)


def with_edit(edits: list[Edit], edit: Edit) -> list[Edit]:
    """``edits`` and ``edit``, by position (edits are kept in the coordinates of the original post)."""
    return sorted([*edits, edit], key=lambda e: e.start)


def make_search_method(spec: str | SearchMethod) -> SearchMethod:
    """A search method from its command-line form (``greedy``, ``beam:width=4``), or the method itself."""
    return SEARCH_METHODS.make(spec)
