"""The cloak attack: the victim reads each post as posters would write it, cloaked by an op (or a mix).

- ``keyword`` mode cloaks the target terms: the default lexicon's, or ``targets`` (a ``Lexicon``, e.g.
  the lexicon and the terms mined from the data: ``cloak.mining.build_targets``); ``full`` mode cloaks
  any word with probability ``rate``.
- ``strength`` says how much of each term: ``poster`` (the default) cloaks every character of a term,
  or the term as a unit, with rarer same-sound characters among the homophones, as posters who want
  past a filter do; ``whole`` the same with common characters only; ``op`` each op's own share.
- ``variants`` cloaks per post, each seeded by (seed, the post's position, the variant), as ``cloak
  perturb --variants K`` makes them; the worst case counts: the variant with the lowest probability of
  the gold label is the post's attacked version, so a post is broken if any variant flips it.
- A post no variant changes keeps its clean prediction (the victim is not asked again).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from cloak import Perturber
from cloak.mining import describe_targets
from cloak.ops.base import STRENGTHS
from cloak.common.params import InstanceOf, Interval, Options, param, validate_fields
from cloak.targets import Lexicon, default_lexicon

from .attack import Outcome, ReportedAs, register_attack
from .victims.base import Victim


@dataclasses.dataclass
class CloakAttack:
    """Cloaking by ``ops`` (``cloak perturb``'s form: ``homophone``, ``homophone,emoji`` as one mix)."""

    kind: ClassVar[str] = "cloak"
    reported_as: ClassVar[ReportedAs] = ReportedAs(figure="ranked", prefix="cloak:", trained_ops=True, varies="ops")

    ops: str = "homophone"
    mode: str = "keyword"
    rate: float = 0.3
    variants: int = 1
    seed: int = 0
    strength: str = "poster"
    targets: Lexicon | None = dataclasses.field(default=None, repr=False)
    _parameter_constraints = {"mode": Options("keyword", "full"), "rate": Interval(float, 0, 1, closed="right"),
                              "variants": Interval(int, 1), "seed": Interval(int, 0),
                              "strength": Options(*STRENGTHS), "targets": [InstanceOf(Lexicon), None]}

    def __post_init__(self) -> None:
        validate_fields(self, "cloak attack")
        keyword = self.targets or default_lexicon()
        self.perturber = Perturber(ops=self.ops, targets=keyword if self.mode == "keyword" else "all",
                                   rate=None if self.mode == "keyword" else self.rate, seed=self.seed,
                                   strength=self.strength)

    @property
    def name(self) -> str:
        return f"cloak:{self.ops.replace(',', '+')}" + ("" if self.mode == "keyword" else f"@full{self.rate:g}")

    def settings(self) -> dict:
        return {"kind": "cloak", "ops": self.ops, "mode": self.mode, "variants": self.variants, "seed": self.seed,
                "strength": self.strength,
                **({"rate": self.rate} if self.mode == "full" else describe_targets(self.targets or default_lexicon()))}

    def skip_reason(self, facts: dict) -> str | None:
        return None  # every victim reads text

    def attack(self, victim: Victim, records: Sequence[dict], positions: Sequence[int],
               clean: np.ndarray) -> list[Outcome]:
        """One outcome per record: the worst variant's text, edits and probabilities. ``positions``
        are the records' places in the data (the cloaks' seeds); ``clean`` their clean probabilities."""
        cloaks = [[self.perturber(r["text"], key=p, variant=k, protected=[tuple(s) for s in r.get("protected") or ()])
                   for k in range(self.variants)] for r, p in zip(records, positions)]
        changed = [(i, k) for i, variants in enumerate(cloaks) for k, c in enumerate(variants) if c.edits]
        probs = victim.predict_proba([cloaks[i][k].text for i, k in changed]) if changed else None
        by_example: dict[int, list[tuple[int, np.ndarray]]] = {}
        for (i, k), p in zip(changed, probs if probs is not None else []):
            by_example.setdefault(i, []).append((k, p))
        outcomes = []
        for i, record in enumerate(records):
            label, tried = int(record["label"]), by_example.get(i, [])
            if not tried:
                outcomes.append(Outcome(record["text"], [], clean[i], changed=False, queries=0))
                continue
            k, p = min(tried, key=lambda kp: _gold(kp[1], label))
            outcomes.append(Outcome(cloaks[i][k].text, [e.to_dict() for e in cloaks[i][k].edits], p, changed=True,
                                    queries=len(tried), details={"variant": k}))
        return outcomes


def attack_ops(settings: dict) -> set[str]:
    """The op names an attack cloaks with (``homophone:share=1,emoji`` -> {homophone, emoji})."""
    return {spec.split(":")[0] for spec in str(settings.get("ops", "")).split(",") if spec}


def foreign_attack(settings: dict) -> bool:
    """Whether an attack cloaks with foreign ops alone (``Op.foreign``: made by none of the tables ``cloak unveil``
    reads with), from its settings; an op this installation does not know counts as the project's."""
    from cloak.ops import available_ops

    known, ops = available_ops(), attack_ops(settings)
    return bool(ops) and all(getattr(known.get(op), "foreign", False) for op in ops)


@dataclasses.dataclass
class CloakOptions:
    """``attacks evaluate``'s options of the cloak attacks."""

    ops: str | None = param(None, "Cloak attacks, one per op; join ops with + for a mix (homophone+emoji) "
                                  "[default: every op but those from other sources, asked for by name].",
                            metavar="OPS")
    mode: str = param("keyword", "Cloak the target terms (keyword), any word at --rate (full), or both.")
    targets: str = param("lexicon+mined", "Keyword mode: the lexicon's terms, the terms most associated with the "
                                          "offensive label in --data (or --mine-from; `cloak mine-terms`), or both.")
    lexicon: str | None = param(None, "The lexicon instead of the default one (one term a line, or a TSV with a "
                                      "term column).", metavar="FILE", file=True)
    mine_from: str | None = param(None, "Labelled records to mine the targets from [default: --data].",
                                  metavar="FILE", file=True, flags=("--mine-from", "--train"))
    strength: str = param("poster", "How much of each term: every character, with rarer same-sound characters as "
                                    "posters write them (poster); every character (whole); each op's own share (op).")
    rate: float = param(0.3, "Full mode: the share of words cloaked.")
    variants: int = param(1, "Cloaks per post; a post is broken if any of them flips it.")
    seed: int = param(0, "Seed of the cloaks.")
    _parameter_constraints = {"mode": Options("keyword", "full", "both"),
                              "targets": Options("lexicon", "mined", "lexicon+mined"), "strength": Options(*STRENGTHS),
                              "rate": Interval(float, 0, 1, closed="right"), "variants": Interval(int, 1),
                              "seed": Interval(int, 0)}

    def __post_init__(self) -> None:
        validate_fields(self, "cloak options")


def make_cloaks(options: CloakOptions, records: Sequence[dict]) -> list[CloakAttack]:
    """One attack per op or mix of ``ops`` (``a+b`` is one mix; default: the project's own ops, ``default_ops``),
    per mode; keyword mode's targets the lexicon's terms and those mined from ``mine_from`` (default: the records
    under attack)."""
    from cloak.ops import default_ops
    from cloak.common.io import read_records
    from cloak.mining import build_targets

    mixes = [m.strip().replace("+", ",") for m in (options.ops or ",".join(default_ops())).split(",") if m.strip()]
    modes = ["keyword", "full"] if options.mode == "both" else [options.mode]
    labelled = [r for _, r in read_records(options.mine_from, labels=True)] if options.mine_from else records
    terms = build_targets(options.targets, lexicon=options.lexicon, labelled=labelled) if "keyword" in modes else None
    return [CloakAttack(ops=m, mode=mode, rate=options.rate, variants=options.variants, seed=options.seed,
                        strength=options.strength, targets=terms) for m in mixes for mode in modes]


register_attack("cloak", make_cloaks, CloakOptions)


def _gold(probs: np.ndarray, label: int) -> float:
    """The probability of the gold label; an unanswered (NaN) row is as bad as it gets for the victim."""
    return -1.0 if np.isnan(probs).any() else float(probs[label])
