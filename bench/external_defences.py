"""Every defence judged on cloaks the project did not make: tfidf-lr trained on COLD train with and without
cloaked copies, with ``cloak unveil`` in front or not, on C²TU's homophone cloaks of real posts.

Run from the repository root: ``.venv/bin/python -m bench.external_defences`` with ``MMCLOAK_COLD`` and
``MMCLOAK_C2TU`` (docs/guide/data.md); about 15 minutes on 2 cores; writes
``bench/results/external_defences.json``. Copies: the README's recipe (``bench.augmented_detectors``, terms
mined from COLD train, seed 1), ``--balance`` and ``--no-balance``; unveil: ``cloak unveil --targets
lexicon+mined --mine-from`` COLD train at its defaults, in front at prediction (and, for ``both``, of a
detector trained with copies). Sets: C²TU's COLD set's COLD dev posts (``dev``: the recipe is chosen here),
then ToxiCloakCN and the COLD set's COLD test posts, read once. Figures per detector, each with a paired
95% bootstrap interval over posts: recall of toxic posts on the gold text and on the cloaked text (what the
cloaks take), false positives on non-toxic posts (gold and cloaked), each against ``none``, and macro-F1.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bench.augmented_detectors import cloaked, detector
from bench.c2tu_data import cold_parts, read_set
from bench.common import (BIN, RESULTS, WORK, cold_work, machine_info, parser, print_summary, run_once,
                          share_difference, share_interval, write_result)
from cloak.common.io import write_records

# The detectors: the copies their training posts get (None: none), and whether unveil stands in front
DETECTORS = {"none": (None, False), "copies": ("balanced", False), "copies, no balance": ("unbalanced", False),
             "unveil": (None, True), "copies + unveil": ("balanced", True),
             "copies, no balance + unveil": ("unbalanced", True)}
# The bars of issue 73: what the recommended recipe may lose to the cloaks, and add to false positives
RECALL_LOST, FP_RAISE = 0.03, 0.01


def unveiled(work: Path, name: str, texts: list[str], steps: dict) -> list[str]:
    """``texts`` read back by ``cloak unveil`` with the terms of COLD train (a whole command, once)."""
    posts, out = work / f"{name}.jsonl", work / f"{name}.unveiled.jsonl"
    if not out.exists():
        write_records(str(posts), ({"id": f"{name}-{i}", "text": t} for i, t in enumerate(texts)))
    run_once(f"unveil {name}", out, [BIN / "cloak", "unveil", "--in", posts, "--out", out, "--targets",
                                     "lexicon+mined", "--mine-from", work / "train.jsonl", "-q"], steps)
    return [json.loads(line)["text"] for line in out.read_text(encoding="utf-8").splitlines()]


def judged(victims: dict, sets: dict[str, dict]) -> dict:
    """Each detector on each set: toxic recall and false positives, gold and cloaked, with intervals, and
    against ``none``."""
    from attacks import load_victim

    out = {}
    for set_name, data in sets.items():
        labels = data["labels"]
        toxic = [i for i, y in enumerate(labels) if y == 1]
        clean = [i for i, y in enumerate(labels) if y == 0]
        said = {}
        for name, (victim, unveil) in victims.items():
            view = "unveiled" if unveil else "as written"
            model = load_victim(str(victim))
            said[name] = {kind: [int(p) for p in model.predict(data[view][kind])] for kind in ("gold", "cloaked")}
        figures = {}
        y = np.asarray(labels)
        for name, p in said.items():
            none = said["none"]
            hit = {kind: [p[kind][i] for i in toxic] for kind in p}
            fp = {kind: [p[kind][i] for i in clean] for kind in p}
            figures[name] = {
                "recall_gold": share_interval(hit["gold"], [1] * len(toxic)),
                "recall_cloaked": share_interval(hit["cloaked"], [1] * len(toxic)),
                "recall_lost": share_difference(hit["gold"], hit["cloaked"]),
                "fp_gold": share_interval(fp["gold"], [1] * len(clean)),
                "fp_cloaked": share_interval(fp["cloaked"], [1] * len(clean)),
                "fp_gold_over_none": share_difference(fp["gold"], [none["gold"][i] for i in clean]),
                "recall_cloaked_over_none": share_difference(hit["cloaked"], [none["cloaked"][i] for i in toxic]),
                "macro_f1": {kind: macro_f1_interval(y, np.asarray(p[kind])) for kind in p}}
        out[set_name] = {"posts": len(labels), "toxic": len(toxic), "detectors": figures}
    return out


def macro_f1_interval(labels: np.ndarray, predictions: np.ndarray) -> dict:
    """Macro-F1 of two-label predictions, with its 95% bootstrap interval over posts."""
    from attacks.bootstrap import interval, macro_f1, resamples

    whole = macro_f1(labels, predictions, 2, np.arange(len(labels))[None, :])[0]
    draws = np.concatenate([macro_f1(labels, predictions, 2, rows) for rows in resamples(len(labels))])
    return {"value": round(float(whole), 4), "interval": [round(x, 4) for x in interval(draws)]}


def recommended(dev: dict) -> dict:
    """The detector ``dev`` chooses: the least toxic recall lost to the cloaks of those raising false positives
    on gold non-toxic posts by at most FP_RAISE over ``none`` (of equals, the first in DETECTORS)."""
    rows = dev["detectors"]
    allowed = [n for n, r in rows.items() if r["fp_gold_over_none"]["difference"] <= FP_RAISE]
    name = min(allowed, key=lambda n: (rows[n]["recall_lost"]["difference"], list(DETECTORS).index(n)))
    return {"detector": name, "rule": f"the least toxic recall lost to the cloaks of the detectors raising false "
                                      f"positives on gold non-toxic dev posts by at most {FP_RAISE} over none",
            "recall_lost": rows[name]["recall_lost"], "fp_gold_over_none": rows[name]["fp_gold_over_none"]}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "external_defences.json", cold=True, c2tu=True,
                work=WORK / "external_defences")
    args = ap.parse_args()
    started = time.perf_counter()
    work, steps = cold_work(args, ("train",))
    copies = {kind: cloaked(work, work / "train.jsonl", f"train_{kind}", kind == "balanced", 1, steps)
              for kind in ("balanced", "unbalanced")}
    trained = {kind: detector(work, kind, [work / "train.jsonl", *([copies[kind]] if kind in copies else [])], steps)
               for kind in ("plain", *copies)}
    victims = {name: (trained[kind or "plain"], unveil) for name, (kind, unveil) in DETECTORS.items()}

    sets = {}
    for name in ("cold", "toxicloakcn"):
        texts = {kind: [p["text"] for p in read_set(args.c2tu, name, kind)] for kind in ("cloaked", "gold")}
        labels = [p["label"] for p in read_set(args.c2tu, name, "gold")]
        parts = cold_parts(args.cold, texts["gold"]) if name == "cold" else {"all": list(range(len(labels)))}
        for part, rows in parts.items():
            key = {"dev": "dev", "test": "cold test"}.get(part, name)
            picked = {kind: [texts[kind][i] for i in rows] for kind in texts}
            sets[key] = {"labels": [labels[i] for i in rows], "as written": picked,
                         "unveiled": {kind: unveiled(work, f"{key.replace(' ', '_')}_{kind}", picked[kind], steps)
                                      for kind in picked}}
    dev = judged(victims, {"dev": sets.pop("dev")})
    choice = recommended(dev["dev"])
    test = judged(victims, sets)
    write_result(args.out, {"benchmark": "bench/external_defences.py", "machine": machine_info(), "steps": steps,
                            "detectors": {n: {"copies": k, "unveil": u} for n, (k, u) in DETECTORS.items()},
                            "bars": {"recall_lost": RECALL_LOST, "fp_raise": FP_RAISE},
                            "choice": choice, "sets": {**dev, **test}})
    rows = [(f"{s}: {n}", f"lost {r['recall_lost']['difference']:+.3f}",
             f"fp {r['fp_gold']['share']:.3f} ({r['fp_gold_over_none']['difference']:+.3f})")
            for s, d in {**dev, **test}.items() for n, r in d["detectors"].items()]
    print_summary([("chosen on dev", choice["detector"], ""), *rows], args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
