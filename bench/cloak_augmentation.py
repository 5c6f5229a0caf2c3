"""Does training on ``cloak``'s output make a detector hold up against cloaking? A character n-gram
detector on COLD, trained with and without cloak augmentation, scored on COLD test cloaked by each
style separately.

Run from the repository root: ``.venv/bin/python -m bench.cloak_augmentation`` (about 15 minutes;
``--held-out`` adds one model per op family, about 20 more); writes
``bench/results/cloak_augmentation.json``. Every step is the command a user runs, and is skipped when
its output is there, so a rerun continues.

- Detector: ``attacks train --model tfidf-lr`` (character 1-3-gram TF-IDF, logistic regression).
- ``base`` trains on COLD train (25,726 posts). ``augmented`` trains on COLD train plus ``--copies``
  cloaked copies of every post with a lexicon term (``cloak perturb --ops`` every op at its defaults,
  so the new styles in their default mixes, ``--targets lexicon``; only copies that changed are kept).
- Styles: every op at its defaults and every style its ``examples`` show (``pinyin:mode=word:tones=marks``,
  ``split:depth=2`` ...), each cloaking COLD test's lexicon terms alone (``cloak perturb --ops STYLE``).
- Figures: the recall of offensive posts, on the offensive posts the style changed, clean and cloaked,
  for each model; the recall cloaking takes from ``base`` and the share of it ``augmented`` wins back:
  ``(aug_cloaked - base_cloaked) / (base_clean - base_cloaked)``, averaged over the styles.
- ``--held-out``: for each op, a model augmented with every op but that one, scored on that op's
  styles: how much augmentation helps against a cloaking family it never saw.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from bench.common import BIN, RESULTS, WORK, cold_work, machine_info, parser, records, run_once, write_result
from cloak.common.io import write_records
from cloak.ops import available_ops, example_specs

MODEL = "tfidf-lr"


def styles() -> dict[str, str]:
    """Style spec -> the op it belongs to: every op at its defaults, and every style its examples show."""
    found = {name: name for name in sorted(available_ops())}
    for spec in example_specs():
        found.setdefault(spec, spec.split(":")[0])
    return found




def recall(outcomes: list[dict], ids: set[str]) -> float:
    hit = [o["victim"]["label"] == 1 for o in outcomes if o["id"] in ids]
    return sum(hit) / max(1, len(hit))


def train(name: str, posts: list[dict], work: Path, steps: dict) -> Path:
    data, victim = work / f"train_{name}.jsonl", work / f"victim_{name}"
    if not (victim / "victim.json").exists():
        write_records(str(data), posts)
    run_once(f"train {name}", victim / "victim.json", [BIN / "attacks", "train", "--model", MODEL, "--train", data,
                                                      "--out", victim], steps)
    return victim


def augmented(train_path: Path, ops: list[str], copies: int, work: Path, tag: str, steps: dict) -> list[dict]:
    """COLD train plus the cloaked copies (by ``ops``) that changed."""
    out = work / f"cloaked_train_{tag}.jsonl"
    run_once(f"cloak train {tag}", out, [BIN / "cloak", "perturb", "--in", train_path, "--out", out, "--ops", ",".join(ops),
                                     "--targets", "lexicon", "--variants", copies, "-q"], steps)
    copies_changed = [r for r in records(out) if r["cloak"]["edits"]]
    for r in copies_changed:
        r["id"] = f"{r['id']}-cloak{r['cloak']['variant']}"
    return records(train_path) + copies_changed


def trained_victims(work: Path, copies: int, held_out: bool, steps: dict) -> dict[str, Path]:
    """``base``, ``augmented`` (every op) and, with ``held_out``, one model augmented without each op."""
    all_ops = sorted(available_ops())
    victims = {"base": train("base", records(work / "train.jsonl"), work, steps),
               "augmented": train("augmented", augmented(work / "train.jsonl", all_ops, copies, work, "all",
                                                         steps), work, steps)}
    if held_out:
        for op in all_ops:
            others = [o for o in all_ops if o != op]
            victims[f"without-{op}"] = train(f"without-{op}", augmented(
                work / "train.jsonl", others, copies, work, f"without-{op}", steps), work, steps)
    return victims


def scores(victims: dict[str, Path], victim: str, data: Path, tag: str, work: Path, steps: dict) -> list[dict]:
    """``attacks predict`` of a victim on a test file, once."""
    out = work / f"pred_{victim}_{tag}.jsonl"
    run_once(f"predict {victim} {tag}", out, [BIN / "attacks", "predict", "--victim", victims[victim],
                                          "--in", data, "--out", out], steps)
    return records(out)


def style_row(spec: str, op: str, victims: dict[str, Path], clean: dict[str, list[dict]], offensive: set[str],
              held_out: bool, work: Path, steps: dict) -> dict:
    """One style's figures: recall on the offensive posts it changed, clean and cloaked, for each model."""
    tag = spec.replace(":", "_").replace("=", "-")
    data = work / f"test_{tag}.jsonl"
    run_once(f"cloak test {spec}", data, [BIN / "cloak", "perturb", "--in", work / "test.jsonl", "--out", data,
                                      "--ops", spec, "--targets", "lexicon", "-q"], steps)
    changed = {r["id"] for r in records(data) if r["cloak"]["edits"]} & offensive
    row = {"op": op, "offensive_changed": len(changed)}
    for v in ["base", "augmented"] + ([f"without-{op}"] if held_out else []):
        key = "held_out" if v.startswith("without-") else v
        row[key] = {"clean": recall(clean[v], changed),
                    "cloaked": recall(scores(victims, v, data, tag, work, steps), changed)}
    lost = row["base"]["clean"] - row["base"]["cloaked"]
    row["recall_lost"] = lost
    for key in ("augmented", "held_out"):
        if key in row:
            row[f"{key}_closes"] = (row[key]["cloaked"] - row["base"]["cloaked"]) / lost if lost > 0 else None
    print(f"{spec:40} changed {len(changed):4}  base {row['base']['clean']:.3f} -> {row['base']['cloaked']:.3f}"
          f"  augmented {row['augmented']['clean']:.3f} -> {row['augmented']['cloaked']:.3f}"
          f"  closes {row['augmented_closes']}", flush=True)
    return row


def summary(results: dict[str, dict], clean: dict[str, list[dict]], offensive: set[str], held_out: bool) -> dict:
    """The share of the recall cloaking takes that augmentation wins back, over the styles that changed at
    least 20 offensive posts; and each model's clean figures."""
    def mean_closed(key: str) -> float | None:
        rows = [r for r in results.values() if r.get(f"{key}_closes") is not None and r["offensive_changed"] >= 20]
        return sum(r[f"{key}_closes"] for r in rows) / len(rows) if rows else None

    return {"styles_averaged": sum(1 for r in results.values() if r["recall_lost"] > 0
                                   and r["offensive_changed"] >= 20),
            "augmented_closes_mean": mean_closed("augmented"),
            "held_out_closes_mean": mean_closed("held_out") if held_out else None,
            "clean_recall_all_offensive": {v: recall(clean[v], offensive) for v in clean},
            "clean_accuracy": {v: sum((o["victim"]["label"] == o["label"]) for o in clean[v]) / len(clean[v])
                               for v in clean}}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "cloak_augmentation.json", cold=True, work=WORK / "augmentation")
    ap.add_argument("--copies", type=int, default=2, help="cloaked copies of each training post")
    ap.add_argument("--held-out", action="store_true", help="also one model per op, augmented without it")
    args = ap.parse_args()
    started = time.perf_counter()
    work, steps = cold_work(args, ("train", "test"))
    offensive = {r["id"] for r in records(work / "test.jsonl") if r["label"] == 1}
    victims = trained_victims(work, args.copies, args.held_out, steps)
    clean = {v: scores(victims, v, work / "test.jsonl", "clean", work, steps) for v in victims}
    results = {spec: style_row(spec, op, victims, clean, offensive, args.held_out, work, steps)
               for spec, op in styles().items()}
    figures = summary(results, clean, offensive, args.held_out)
    print(json.dumps(figures, indent=1))
    write_result(args.out, {"machine": machine_info(), "model": MODEL, "copies": args.copies, "summary": figures,
                            "styles": results, "steps": steps, "seconds": time.perf_counter() - started})


if __name__ == "__main__":
    main()
