"""Does MMBERT lose less than text-only BERT when posts are cloaked? A real experiment on COLD.

Run from the repository root with the real weights of ``shared/models/offline_weights.py``::

    python ../shared/models/offline_weights.py /tmp/weights
    .venv/bin/python -m bench.mmbert_cold --weights /tmp/weights

Everything lands in ``--work`` (default ``bench/work/mmbert``) and is reused when present, so a rerun
after an interruption continues; the figures go to ``bench/results/mmbert_cold.json``.

MMBERT: Xue et al., "MMBERT: Scaled Mixture-of-Experts Multimodal BERT for Robust Chinese Hate Speech
Detection under Cloaking Perturbations", 2025, arXiv:2508.00760.

1. Data (``bench.mmbert_data``): COLD posts of 8-32 characters. Training: the first ``--train``
   posts, each followed by a cloaked copy (ops homophone, similar, emoji, split, abbrev, pinyin,
   english; lexicon targets), so ``2 x --train`` examples; dev: ``--train // 5`` posts (at most 200)
   and their cloaks;
   test: 300 posts, clean and cloaked by ``homophone`` alone and by ``emoji`` alone.
2. Speech: every text spoken by Kokoro-82M (int8 ONNX, voice zf_xiaobei; ``--tts espeak-ng``: eSpeak
   NG's Mandarin, about 100x faster) and encoded by Whisper base (trimmed), cached in ``WORK/speech``.
3. Backbone: the shared ``small`` BERT of ``python -m bench.backbone`` (``--backbone``, default
   ``bench/work/backbone``: masked LM on COLD train + SWSR for as long as it improves), which the
   ``attacks`` victims of ``bench.victims`` use too. Where it has not been made, the ``small`` preset's
   BERT pre-trained here on ``--pretrain-posts`` COLD training posts for ``--pretrain-epochs`` epochs
   (what the figures in the README before the shared backbone used; no pretrained Chinese BERT can be
   had on this machine).
4. MMBERT: ``small`` preset, stages 1, 2, 3 in turn from that backbone. Text-only: the same backbone
   with one modality (a plain BERT), fine-tuned with the same stage-3 settings (epochs, learning rate,
   batch, early stopping on dev macro-F1).
5. Both evaluated on the three test sets: accuracy and macro-F1, overall and on the posts the op
   changed (a post without a lexicon term stays as it is); the drop = clean - cloaked.
6. MMBERT's routing over the three test sets together, grouped by op (the paper's Fig. 3):
   ``--routing-out`` (default ``bench/results/mmbert_routing/``: routing.json, routing.png).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bench.common import RESULTS, WORK, machine_info, parser, weight_files, write_result
from bench.mmbert_data import TEST_OPS, VOICE, head, prepare
from cloak.io import read_records

TEST_SETS = ("clean", *TEST_OPS)
BOOTSTRAP = 2000  # resamples of the test posts
DEV_POSTS = 200  # the dev set already spoken; a bigger --train keeps it (early stopping only)


def run_config(work: Path, weights: Path, text_only: bool, quick: bool, backend: str = "kokoro-onnx",
               seed: int = 0) -> dict:
    from mmbert.presets import load_run_config

    run = load_run_config("small")
    run["train"]["seed"] = seed
    tts = ({"name": "kokoro-onnx", "model": str(weights / "kokoro" / "kokoro-v1.0.int8.onnx"), "voice": VOICE}
           if backend == "kokoro-onnx" else {"name": backend})
    run["features"].update(tts={"name": "tone"} if quick else tts, whisper=str(weights / "whisper-base.pt"),
                           speech_cache=str(work / "speech"))
    if text_only:
        run["model"]["modalities"] = ["text"]
    if quick:
        for stage in ("stage1", "stage2", "stage3"):
            run["train"][stage]["epochs"] = 1
    return run


def trained(stage: int, run: dict, files: dict, out: Path, from_dir: Path, allow_skip: bool = False) -> dict:
    """Train a stage unless ``out`` already holds its finished model; returns its training summary."""
    from mmbert.train import train_stage

    summary = out / "training.json"
    if not summary.exists():
        resume = (out / "checkpoint" / "trainer_state.json").exists()
        started = time.time()
        train_stage(stage, run, str(files["train"]), str(files["dev"]), str(out), str(from_dir),
                    resume=resume, allow_skip=allow_skip)
        print(f"{out.name}: {time.time() - started:.0f} s", flush=True)
    data = json.loads(summary.read_text())
    log = json.loads((out / "log.json").read_text())
    return {"best_epoch": data["best_epoch"], "epochs_run": data["epochs_run"], "best_dev_score": data["best_score"],
            "seconds": round(sum(e["seconds"] for e in log), 1)}


def evaluate(model_dir: Path, files: dict) -> tuple[dict, dict[str, np.ndarray]]:
    """Figures on each test set, overall and on the posts its op changed; the drops against the same
    posts clean (the test files hold the same posts in the same order). Also returns the predictions,
    by test set."""
    from mmbert.inference import infer
    from mmbert.loading import load_model
    from mmbert.metrics import classification_metrics

    model, featurizer = load_model(str(model_dir))
    out, clean_predictions, by_set = {}, None, {}
    for name in TEST_SETS:
        records = [r for _, r in read_records(str(files[f"test_{name}"]))]
        predictions = by_set[name] = infer(model, featurizer, records)["probs"].argmax(1)
        labels = [r["label"] for r in records]
        out[name] = {"all": classification_metrics(labels, predictions)}
        if name == "clean":
            clean_predictions = predictions
            continue
        changed = [i for i, r in enumerate(records) if r.get("source_text", r["text"]) != r["text"]]
        changed_labels = [labels[i] for i in changed]
        out[name]["changed"] = classification_metrics(changed_labels, predictions[changed])
        out[name]["clean_on_changed"] = classification_metrics(changed_labels, clean_predictions[changed])
        out[name]["drop_f1"] = round(out["clean"]["all"]["f1"] - out[name]["all"]["f1"], 4)
        out[name]["drop_f1_changed"] = round(out[name]["clean_on_changed"]["f1"] - out[name]["changed"]["f1"], 4)
    return out, by_set


def macro_f1(labels: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """Macro-F1 of each row of (resamples, n) label and prediction arrays (as sklearn's, zero_division=0)."""
    f1 = []
    for c in np.unique(labels):
        tp = ((predictions == c) & (labels == c)).sum(1)
        errors = ((predictions == c) != (labels == c)).sum(1)
        f1.append(np.where(2 * tp + errors > 0, 2 * tp / np.maximum(2 * tp + errors, 1), 0.0))
    return np.mean(f1, axis=0)


def bootstrap_drops(labels: np.ndarray, predictions: dict[str, dict[str, np.ndarray]],
                    resamples: int = BOOTSTRAP, seed: int = 0) -> dict:
    """95% intervals of each model's F1 drop under each op, and of text-only's drop minus MMBERT's,
    by resampling test posts (the same posts for both models and all three test sets: a paired
    bootstrap), so that a difference can be told from the noise of 300 posts."""
    rows = np.random.default_rng(seed).integers(0, len(labels), (resamples, len(labels)))
    y = labels[rows]
    drops = {op: {model: macro_f1(y, p["clean"][rows]) - macro_f1(y, p[op][rows])
                  for model, p in predictions.items()} for op in TEST_OPS}

    def interval(x: np.ndarray) -> list[float]:
        return [round(float(v), 4) for v in np.percentile(x, [2.5, 97.5])]

    return {"resamples": resamples, "seed": seed,
            **{op: {**{f"{model}_drop_f1": interval(d) for model, d in by_model.items()},
                    "text_only_minus_mmbert": interval(by_model["text_only"] - by_model["mmbert"]),
                    "share_mmbert_drops_less": round(float(np.mean(by_model["mmbert"] < by_model["text_only"])), 4)}
               for op, by_model in drops.items()}}


def routing_figure(model_dir: Path, files: dict, out_dir: Path) -> dict:
    """The paper's Fig. 3 for the trained MMBERT over the three test sets together."""
    from mmbert.loading import load_model
    from mmbert.routing import routing_analysis

    model, featurizer = load_model(str(model_dir))
    records = [r for name in TEST_SETS for _, r in read_records(str(files[f"test_{name}"]))]
    return routing_analysis(model, featurizer, records, str(out_dir))


def backbone_for(args, work: Path, corpus: Path) -> tuple[Path, dict]:
    """The shared backbone where it is complete, else the ``small`` BERT pre-trained here (resumed if begun);
    and its last log entry."""
    from mmbert.presets import load_run_config
    from mmbert.pretrain import pretrain

    backbone = args.backbone
    shared = (backbone / "config.json").exists() and not (backbone / "checkpoint").exists()
    if not shared:
        backbone = work / "backbone"
    if not shared and (not (backbone / "config.json").exists() or (backbone / "checkpoint").exists()):
        run = load_run_config("small")
        run["train"]["pretrain"]["epochs"] = args.pretrain_epochs
        pretrain(str(corpus), str(backbone), run, resume=(backbone / "checkpoint" / "trainer_state.json").exists())
    return backbone, json.loads((backbone / "log.json").read_text())[-1]


def train_both(args, files: dict, backbone: Path, runs: Path) -> tuple[dict, dict]:
    """MMBERT's three stages and the text-only twin; MMBERT's run configuration and the training summaries."""
    mm, text = (run_config(args.work, args.weights, text_only, args.quick, args.tts, args.seed)
                for text_only in (False, True))
    training = {"mmbert_stage1": trained(1, mm, files, runs / "mmbert_stage1", backbone)}
    training["mmbert_stage2"] = trained(2, mm, files, runs / "mmbert_stage2", runs / "mmbert_stage1")
    training["mmbert_stage3"] = trained(3, mm, files, runs / "mmbert_stage3", runs / "mmbert_stage2")
    training["text_only"] = trained(3, text, files, runs / "text_only", backbone, allow_skip=True)
    return mm, training


def half_the_drop(results: dict) -> dict:
    """Per op: does MMBERT lose at most half the macro-F1 text-only loses?"""
    goal = {}
    for op in TEST_OPS:
        mm_drop, text_drop = results["mmbert"][op]["drop_f1"], results["text_only"][op]["drop_f1"]
        goal[op] = {"mmbert_drop_f1": mm_drop, "text_only_drop_f1": text_drop,
                    "at_most_half": bool(text_drop > 0 and mm_drop <= text_drop / 2)}
    return goal


def print_table(report: dict) -> None:
    print(f"{'model':10} {'test':10} {'acc':>6} {'F1':>6} {'drop':>6} {'F1 changed':>10} {'drop changed':>12}")
    for model in ("text_only", "mmbert"):
        for name in TEST_SETS:
            r = report["results"][model][name]
            print(f"{model:10} {name:10} {r['all']['accuracy']:6.3f} {r['all']['f1']:6.3f} "
                  f"{r.get('drop_f1', 0):6.3f} {r.get('changed', r['all'])['f1']:10.3f} "
                  f"{r.get('drop_f1_changed', 0):12.3f}")
    for op in TEST_OPS:
        b = report["bootstrap_95"][op]
        print(f"{op}: 95% intervals of the F1 drop: text-only {b['text_only_drop_f1']}, MMBERT {b['mmbert_drop_f1']}, "
              f"text-only minus MMBERT {b['text_only_minus_mmbert']}")


def arguments():
    ap = parser(__doc__, out=RESULTS / "mmbert_cold.json", cold=True, work=WORK / "mmbert", weights=True)
    ap.add_argument("--train", type=int, default=2000, help="training posts (each also cloaked)")
    ap.add_argument("--backbone", type=Path, default=WORK / "backbone",
                    help="the shared backbone of bench.backbone (used when it is complete)")
    ap.add_argument("--pretrain-posts", type=int, default=8000)
    ap.add_argument("--pretrain-epochs", type=int, default=1)
    ap.add_argument("--routing-out", type=Path, default=RESULTS / "mmbert_routing",
                    help="folder for routing.json and routing.png")
    ap.add_argument("--tts", choices=("kokoro-onnx", "espeak-ng"), default="kokoro-onnx",
                    help="the speech modality's TTS: Kokoro (2-3 s a post here) or eSpeak NG (20 ms)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 40 posts, tone TTS instead of Kokoro, 1 epoch a stage, results to /tmp")
    ap.add_argument("--seed", type=int, default=0,
                    help="training seed of both models (initialisation, order, dropout); another seed trains "
                         "in WORK/runs_N_seedS beside seed 0's runs, on the same data, speech and backbone")
    return ap


def main() -> None:
    ap = arguments()
    args = ap.parse_args()
    if args.quick:
        args.train, args.out, args.routing_out = 40, Path("/tmp/mmbert_cold_quick.json"), Path("/tmp/mmbert_routing")
    weight_files(ap, args.weights, "whisper-base.pt",
                 *(["kokoro/kokoro-v1.0.int8.onnx"] if args.tts == "kokoro-onnx" and not args.quick else []))
    import torch

    started = time.time()
    work = args.work
    dev_posts = min(args.train // 5, DEV_POSTS)
    paths = prepare(args.cold, work, max(args.train, 1000), DEV_POSTS, 300, args.pretrain_posts)
    files = {"train": head(paths["train"], 2 * args.train, work / f"train_{args.train}.jsonl"),
             "dev": head(paths["dev"], 2 * dev_posts, work / f"dev_{dev_posts}.jsonl"),
             **{f"test_{n}": paths[f"test_{n}"] for n in TEST_SETS}}
    backbone, pretrain_log = backbone_for(args, work, paths["pretrain_corpus"])
    runs = work / (f"runs_{args.train}" + ("_quick" if args.quick else "") + (f"_seed{args.seed}" if args.seed else ""))
    mm, training = train_both(args, files, backbone, runs)
    results, predictions = {}, {}
    for model, folder in (("mmbert", "mmbert_stage3"), ("text_only", "text_only")):
        results[model], predictions[model] = evaluate(runs / folder, files)
    labels = np.array([r["label"] for _, r in read_records(str(files["test_clean"]))])
    routing = routing_figure(runs / "mmbert_stage3", files, args.routing_out)
    report = {
        "quick": args.quick,
        "what": f"small-preset MMBERT (text + {args.tts} speech + glyph CNN) vs the same backbone text-only, COLD",
        "tts": mm["features"]["tts"], "seed": args.seed,
        "posts": {"train_posts": args.train, "train_examples": 2 * args.train, "dev_examples": 2 * dev_posts,
                  "test_posts": 300, "post_chars": "8-32", "pretrain_posts": args.pretrain_posts,
                  "pretrain_epochs": args.pretrain_epochs, "backbone": str(backbone)},
        "pretrain": pretrain_log, "training": training,
        "settings": {"stage_settings": mm["train"], "model": mm["model"]},
        "results": results, "goal_half_the_drop": half_the_drop(results),
        "bootstrap_95": bootstrap_drops(labels, predictions), "routing": routing,
        "seconds": round(time.time() - started, 1), "torch_threads": torch.get_num_threads(),
        "machine": machine_info(),
    }
    write_result(args.out, report)
    print_table(report)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
