"""Does training on ``cloak``'s output make a detector hold up against cloaking? A character n-gram
detector on COLD, trained with and without cloak augmentation, scored on COLD test cloaked by each
style separately.

Run from the repository root: ``.venv/bin/python bench/cloak_augmentation.py`` (about 15 minutes;
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

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.backbone import SHARED  # noqa: E402
from bench.habertor_cold import run  # noqa: E402
from bench.long_posts import BIN  # noqa: E402
from bench.machine import machine_info  # noqa: E402
from cloak.io import write_atomic  # noqa: E402
from cloak.ops import available_ops, example_specs  # noqa: E402

MODEL = "tfidf-lr"


def styles() -> dict[str, str]:
    """Style spec -> the op it belongs to: every op at its defaults, and every style its examples show."""
    found = {name: name for name in sorted(available_ops())}
    for spec in example_specs():
        found.setdefault(spec, spec.split(":")[0])
    return found


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def step(name: str, output: Path, command: list, steps: dict) -> None:
    """Run ``command`` unless ``output`` is already there (a rerun continues where it stopped)."""
    if not output.exists():
        run(name, command, steps)


def recall(outcomes: list[dict], ids: set[str]) -> float:
    hit = [o["victim"]["label"] == 1 for o in outcomes if o["id"] in ids]
    return sum(hit) / max(1, len(hit))


def train(name: str, records: list[dict], work: Path, steps: dict) -> Path:
    data, victim = work / f"train_{name}.jsonl", work / f"victim_{name}"
    if not (victim / "victim.json").exists():
        write_atomic(data, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode())
        run(f"train {name}", [BIN / "attacks", "train", "--model", MODEL, "--train", data, "--out", victim], steps)
    return victim


def augmented(train_path: Path, ops: list[str], copies: int, work: Path, tag: str, steps: dict) -> list[dict]:
    """COLD train plus the cloaked copies (by ``ops``) that changed."""
    out = work / f"cloaked_train_{tag}.jsonl"
    step(f"cloak train {tag}", out, [BIN / "cloak", "perturb", "--in", train_path, "--out", out, "--ops", ",".join(ops),
                                     "--targets", "lexicon", "--variants", copies, "-q"], steps)
    copies_changed = [r for r in read(out) if r["cloak"]["edits"]]
    for r in copies_changed:
        r["id"] = f"{r['id']}-cloak{r['cloak']['variant']}"
    return read(train_path) + copies_changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=Path, default=SHARED / "cold")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work" / "augmentation")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "cloak_augmentation.json")
    ap.add_argument("--copies", type=int, default=2, help="cloaked copies of each training post")
    ap.add_argument("--held-out", action="store_true", help="also one model per op, augmented without it")
    args = ap.parse_args()
    started = time.perf_counter()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    steps: dict = {}

    for split in ("train", "test"):
        step(f"convert {split}", work / f"{split}.jsonl",
             [BIN / "cloak", "convert", "--from", "cold", "--in", args.cold / f"{split}.csv",
              "--out", work / f"{split}.jsonl"], steps)
    test = read(work / "test.jsonl")
    offensive = {r["id"] for r in test if r["label"] == 1}
    all_ops = sorted(available_ops())

    victims = {"base": train("base", read(work / "train.jsonl"), work, steps),
               "augmented": train("augmented", augmented(work / "train.jsonl", all_ops, args.copies, work, "all",
                                                         steps), work, steps)}
    if args.held_out:
        for op in all_ops:
            others = [o for o in all_ops if o != op]
            victims[f"without-{op}"] = train(f"without-{op}", augmented(
                work / "train.jsonl", others, args.copies, work, f"without-{op}", steps), work, steps)

    def scores(victim: str, data: Path, tag: str) -> list[dict]:
        out = work / f"pred_{victim}_{tag}.jsonl"
        step(f"predict {victim} {tag}", out, [BIN / "attacks", "predict", "--victim", victims[victim],
                                              "--in", data, "--out", out], steps)
        return read(out)

    clean = {v: scores(v, work / "test.jsonl", "clean") for v in victims}
    results = {}
    for spec, op in styles().items():
        tag = spec.replace(":", "_").replace("=", "-")
        data = work / f"test_{tag}.jsonl"
        step(f"cloak test {spec}", data, [BIN / "cloak", "perturb", "--in", work / "test.jsonl", "--out", data,
                                          "--ops", spec, "--targets", "lexicon", "-q"], steps)
        changed = {r["id"] for r in read(data) if r["cloak"]["edits"]} & offensive
        row = {"op": op, "offensive_changed": len(changed)}
        models = ["base", "augmented"] + ([f"without-{op}"] if args.held_out else [])
        for v in models:
            key = "held_out" if v.startswith("without-") else v
            row[key] = {"clean": recall(clean[v], changed), "cloaked": recall(scores(v, data, tag), changed)}
        lost = row["base"]["clean"] - row["base"]["cloaked"]
        row["recall_lost"] = lost
        for key in ("augmented", "held_out"):
            if key in row:
                row[f"{key}_closes"] = (row[key]["cloaked"] - row["base"]["cloaked"]) / lost if lost > 0 else None
        results[spec] = row
        print(f"{spec:40} changed {len(changed):4}  base {row['base']['clean']:.3f} -> {row['base']['cloaked']:.3f}"
              f"  augmented {row['augmented']['clean']:.3f} -> {row['augmented']['cloaked']:.3f}"
              f"  closes {row['augmented_closes']}", flush=True)

    def mean_closed(key: str) -> float | None:
        rows = [r for r in results.values() if r.get(f"{key}_closes") is not None and r["offensive_changed"] >= 20]
        return sum(r[f"{key}_closes"] for r in rows) / len(rows) if rows else None

    summary = {"styles_averaged": sum(1 for r in results.values() if r["recall_lost"] > 0
                                      and r["offensive_changed"] >= 20),
               "augmented_closes_mean": mean_closed("augmented"),
               "held_out_closes_mean": mean_closed("held_out") if args.held_out else None,
               "clean_recall_all_offensive": {v: recall(clean[v], offensive) for v in victims},
               "clean_accuracy": {v: sum((o["victim"]["label"] == o["label"]) for o in clean[v]) / len(clean[v])
                                  for v in victims}}
    print(json.dumps(summary, indent=1))
    write_atomic(args.out, json.dumps({"machine": machine_info(), "model": MODEL, "copies": args.copies,
                                       "summary": summary, "styles": results, "steps": steps,
                                       "seconds": time.perf_counter() - started}, indent=1,
                                      ensure_ascii=False).encode())


if __name__ == "__main__":
    main()
