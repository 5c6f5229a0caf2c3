"""Benchmark of the detectors (``attacks`` victims) on COLD: trained on COLD train, scored on COLD test.

Run from the repository root: ``.venv/bin/python -m bench.victims`` (the conventional victims and the
training-size curve); ``--neural bert,chinesebert``, after ``python -m bench.backbone``, trains those on
the shared ``small`` backbone it makes, or on any encoder folder given as ``--backbone`` (multilingual-e5-small:
``--backbone DIR --lr 2e-5 --backbone-layers 6 --max-length 64 --out bench/results/victims_e5.json``). An
interrupted fit continues from its last checkpoint when rerun. ``--limit-train N`` (``-dev``, ``-test``) take the
first N posts of a split, for a trial run. Writes ``bench/results/victims.json`` after every victim (a rerun skips the
victims already there; ``--force`` redoes them) and the curve to ``bench/results/curve_tfidf_lr/``.

- Data: COLD train (25,726 posts) to train, COLD test (5,323) to score; COLD dev (6,431) picks the
  torch victims' best epoch.
- Conventional victims with their default hyperparameters (``--grid`` for the grids of Wankmüller,
  "Introduction to Neural Transfer Learning with Transformers for Social Science Text Analysis",
  2021, arXiv:2102.02111), timed
  in this process: training seconds, and prediction seconds over the whole test set.
- ``emb-*`` read word vectors trained here with gensim's word2vec (skip-gram, 100 dimensions, window
  5, min count 3, 5 epochs, seed 0, one thread) on jieba's words of the backbone's corpus (COLD train
  + SWSR): no pretrained Chinese vectors are reachable on these machines.
- Figures (``attacks.metrics``): macro-F1, accuracy, macro precision / recall, AUC and average
  precision of p(offensive), FPR at 5% FNR and FNR at 5% FPR.
- The curve: ``attacks curve --model tfidf-lr`` on COLD train / test, sizes 500 to 10,000, five
  repeats, run as a user runs it (a subprocess), its wall time recorded.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from bench.common import (BIN, RESULTS, WORK, backbone_info, cold_records, corpus, encoder_options, epoch_seconds,
                          folder, machine_info, parser, print_summary, read_json, resumable, run, write_result)
from cloak.common.io import write_records

CURVE_SIZES = "500,1000,2000,5000,10000"


def word_vectors(texts: list[str], path: Path) -> dict:
    """Train word2vec on jieba's words of ``texts`` and write it in word2vec text format."""
    from gensim.models import Word2Vec

    from attacks.victims.conventional import jieba_words

    started = time.perf_counter()
    sentences = [jieba_words(t) for t in texts]
    model = Word2Vec(sentences, vector_size=100, window=5, min_count=3, sg=1, epochs=5, seed=0, workers=1)
    model.wv.save_word2vec_format(str(path), binary=False)
    return {"words": len(model.wv), "dimensions": 100, "seconds": round(time.perf_counter() - started, 1)}


def score(victim, test: list[dict]) -> dict:
    from attacks.metrics import detection_metrics

    texts = [r["text"] for r in test]
    started = time.perf_counter()
    probs = victim.predict_proba(texts)
    seconds = time.perf_counter() - started
    figures = detection_metrics([r["label"] for r in test], probs)
    return {"macro_f1": figures.pop("f1"), **figures, "predict_seconds": round(seconds, 2),
            "predict_posts_per_second": round(len(texts) / seconds, 1)}


class Results:
    """``victims.json``, written after every victim; another process may be adding its own victims to it."""

    def __init__(self, out: Path, data: dict) -> None:
        self.out = out
        self.result = read_json(out, {})
        self.result.update({"benchmark": "bench/victims.py",
                            "machine": machine_info(("scikit-learn", "lightgbm", "torch")), "data": data})
        self.victims = self.result.setdefault("victims", {})

    def record(self, name: str, entry: dict) -> None:
        self.victims[name] = entry
        if self.out.exists():  # another process may have added its victims meanwhile
            self.victims.update({k: v for k, v in read_json(self.out)["victims"].items() if k != name})
        self.write()
        print(name, {k: v for k, v in entry.items() if k != "grid"}, flush=True)

    def write(self) -> None:
        write_result(self.out, self.result)


def conventional(args, names: list[str], splits: dict[str, list[dict]], results: Results) -> None:
    """Each conventional victim trained on COLD train and scored on COLD test, in this process."""
    from attacks import make_victim
    from attacks.victims.conventional import ConventionalVictim

    vectors = args.work / "word2vec_cold_swsr.txt"
    if any(n.startswith("emb") for n in names) and not vectors.exists():
        folder(args.work)
        results.result["word_vectors"] = word_vectors(corpus(args.cold, args.swsr, 0), vectors)
    for name in names:
        if name in results.victims and not args.force:
            continue
        victim = make_victim(name, {"vectors": str(vectors)} if name.startswith("emb") else {}, {"grid": args.grid})
        t0 = time.perf_counter()
        victim.fit(splits["train"], progress=False)
        entry = {"train_seconds": round(time.perf_counter() - t0, 1), **score(victim, splits["test"]),
                 "params": victim.params_, "grid": victim.grid_results_}
        assert isinstance(victim, ConventionalVictim)
        results.record(name, entry)


def neural(args, splits: dict[str, list[dict]], results: Results) -> None:
    """``bert`` / ``chinesebert`` on ``--backbone`` (any encoder folder), trained on COLD train (dev: COLD dev),
    scored on test; an interrupted fit resumes from its checkpoint in ``WORK/victims/NAME``."""
    from attacks import make_victim

    backbone = backbone_info(args.backbone, args.backbone_layers)
    training = {"epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "patience": 2,
                "checkpoint_minutes": args.checkpoint_minutes}
    config = {"backbone": str(args.backbone), "backbone_layers": args.backbone_layers, "max_length": args.max_length}
    for name in args.neural.split(","):
        if name in results.victims and not args.force:
            continue
        victim = make_victim(name, config, training)
        out = args.work / "victims" / name
        resumed = resumable(out)
        t0 = time.perf_counter()
        victim.fit(splits["train"], splits["dev"], out_dir=str(out), resume=resumed, progress=False)
        log = victim.log_["log"]
        results.record(name, {"train_seconds": round(time.perf_counter() - t0, 1), "resumed": resumed,
                              **score(victim, splits["test"]), "training": training, "config": config,
                              "best_epoch": victim.log_["best_epoch"], "epoch_seconds": epoch_seconds(log),
                              "dev": [{k: e[k] for k in ("epoch", "dev_f1", "seconds")} for e in log],
                              "backbone": backbone})


def curve(args, splits: dict[str, list[dict]]) -> dict:
    """``attacks curve --model tfidf-lr`` as a user runs it, into ``curve_tfidf_lr`` beside ``--out``."""
    data = folder(args.work / "cold")
    for split in ("train", "test"):
        if not (data / f"{split}.jsonl").exists():
            write_records(str(data / f"{split}.jsonl"), splits[split])
    out = args.out.parent / "curve_tfidf_lr"
    if (out / "runs.jsonl").exists() and args.force:
        os.remove(out / "runs.jsonl")
    step = run([BIN / "attacks", "curve", "--model", "tfidf-lr", "--train", data / "train.jsonl", "--test",
                data / "test.jsonl", "--sizes", CURVE_SIZES, "--repeats", "5", "--out", out])
    return {"command": "attacks curve --model tfidf-lr --train cold_train.jsonl --test "
            f"cold_test.jsonl --sizes {CURVE_SIZES} --repeats 5 --out curve/",
            "seconds": round(step["seconds"], 1), "by_size": read_json(out / "curve.json")["by_size"]}


def neural_options(ap) -> None:
    """The torch victims' settings, and the slices of COLD a trial run takes."""
    encoder_options(ap)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    for split in ("train", "dev", "test"):
        ap.add_argument(f"--limit-{split}", type=int, default=None, metavar="N",
                        help=f"the first N posts of COLD {split} only (a trial run) [all]")


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "victims.json", cold=True, swsr=True, work=WORK)
    ap.add_argument("--only", default=None, metavar="NAMES", help="comma-separated victims (default: all conventional)")
    ap.add_argument("--grid", action="store_true", help="Wankmüller (2021)'s grids for the conventional victims")
    ap.add_argument("--neural", default="", metavar="NAMES",
                    help="bert and / or chinesebert on --backbone (two processes may train one each)")
    neural_options(ap)
    ap.add_argument("--no-curve", action="store_true")
    ap.add_argument("--force", action="store_true", help="redo victims already in the results")
    args = ap.parse_args()
    started = time.perf_counter()
    from attacks import conventional_names

    splits = {split: cold_records(args.cold, split)[:getattr(args, f"limit_{split}")]
              for split in ("train", "dev", "test")}
    results = Results(args.out, {split: len(rows) for split, rows in splits.items()})
    conventional(args, args.only.split(",") if args.only else [] if args.neural else conventional_names(),
                 splits, results)
    if args.neural:
        neural(args, splits, results)
    if not args.no_curve:
        results.result["curve_tfidf_lr"] = curve(args, splits)
        results.write()
    rows = [(name, f"{v['macro_f1']:.4f} / {v['auc']:.4f}", f"train {v['train_seconds']} s, "
             f"predict {v['predict_posts_per_second']} posts/s") for name, v in results.victims.items()]
    for r in results.result.get("curve_tfidf_lr", {}).get("by_size", []):
        rows.append((f"curve tfidf-lr {r['size']}", f"{r['mean_macro_f1']:.4f}",
                     f"[{r['min_macro_f1']:.4f}, {r['max_macro_f1']:.4f}]"))
    print_summary(rows, args.out, time.perf_counter() - started, value_width=18)


if __name__ == "__main__":
    main()
