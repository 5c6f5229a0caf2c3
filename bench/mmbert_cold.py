"""Does MMBERT lose less than text-only BERT when posts are cloaked? A real experiment on COLD.

Run from the repository root with the real weights ``make weights`` fetches (``mmcloak-weights``)::

    make weights
    .venv/bin/python -m bench.mmbert_cold --weights weights

Everything lands in ``--work`` (default ``WORK/mmbert``, ``bench.common.WORK``; any folder, outside the repository too)
and is reused when present, so rerunning the same command after an interruption continues (a stage
stopped after a checkpoint resumes from it); the figures go to ``--out`` (default
``bench/results/mmbert_cold.json``), one file a seed: ``python -m bench.mmbert_verdict`` reads them.
On a pretrained encoder (multilingual-e5-small)::

    .venv/bin/python -m bench.mmbert_cold --weights W --tts espeak-ng --backbone W/e5 --backbone-layers 6 \
        --max-length 64 --stage3-lr 2e-5 --train-posts 5000 --work runs/mmbert-e5 --seed 0 \
        --out bench/results/mmbert_e5_seed0.json --routing-out bench/results/mmbert_e5_routing_seed0

MMBERT: Xue et al., "MMBERT: Scaled Mixture-of-Experts Multimodal BERT for Robust Chinese Hate Speech
Detection under Cloaking Perturbations", 2025, arXiv:2508.00760.

1. Data (``bench.mmbert_data``): COLD posts of 8-32 characters. Training: the first ``--train-posts``
   posts, each followed by a cloaked copy (ops homophone, similar, emoji, split, abbrev, pinyin,
   english; lexicon targets), so ``2 x --train-posts`` examples; dev: ``--train-posts // 5`` posts (at
   most 200) and their cloaks; test: ``--test`` posts (1,000), clean and cloaked by homophone, emoji,
   pinyin and split alone, as ``attacks evaluate`` cloaks by default (the lexicon's terms and those mined
   from the test posts, ``poster`` strength; ``--targets``, ``--strength``).
2. Speech: every text spoken by Kokoro-82M (int8 ONNX, voice zf_xiaobei; ``--tts espeak-ng``: eSpeak
   NG's Mandarin, about 100x faster) and encoded by Whisper base (trimmed), cached in ``WORK/speech``;
   done up front and timed (the one-off cost; a rerun finds it cached).
3. Backbone: ``--backbone``, any transformers encoder folder (``--backbone-layers N``: its first N
   layers), default the shared ``small`` BERT of ``python -m bench.backbone``. Where that has not been
   made, the ``small`` preset's BERT pre-trained here on ``--pretrain-posts`` COLD training posts for
   ``--pretrain-epochs`` epochs.
4. MMBERT: ``small`` preset (``--max-length``, ``--stage1-loss``, ``--stage2-rates``, ``--stage3-lr``,
   ``--stage3-text-mask``, ``--stage3-term-mask``, ``--stage3-term-holdout``, ``--epochs`` over it;
   stage 2 at Xue et al.'s rates on a pretrained ``--backbone``), stages 1, 2, 3 in
   turn from that backbone. Text-only: the same backbone with one modality (a plain BERT), fine-tuned
   with the same stage-3 settings (epochs, learning rate, batch, early stopping on dev macro-F1).
   ``--ablation``: also MMBERT with text + speech and with text + vision (Xue et al.'s Table 2), each
   trained through the three stages alike.
5. Every model evaluated on every test set: accuracy and macro-F1, overall and on the posts the op
   changed (a post without a target term stays as it is); the drop = clean - cloaked; a paired bootstrap
   of each drop and of text-only's drop minus each model's; the predictions kept for the verdict.
6. MMBERT's routing over the test sets together, grouped by op (Xue et al.'s Fig. 3):
   ``--routing-out`` (default ``bench/results/mmbert_routing/``: routing.json, routing.png).
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import (RESULTS, WORK, backbone_info, machine_info, parser, read_json, resumable, weight_files,
                          write_result)
from bench.mmbert_data import TEST_SETS, TEST_STRENGTH, TEST_TARGETS, VOICE, head, prepare
from bench.mmbert_evaluation import MODELS, bootstrap_drops, evaluate, half_the_drop, predictions_text, print_table
from bench.mmbert_runs import speech_step, trained
from cloak.common.io import read_records

DEV_POSTS = 200  # the dev set already spoken; a bigger --train-posts keeps it (early stopping only)
DEFAULT_BACKBONE = WORK / "backbone"  # bench.backbone's small BERT, pre-trained here from scratch
# The models --ablation adds: the run folder of the model evaluated, and the modalities.
ABLATION = {"text_speech": ("text_speech_stage3", ("text", "speech")),
            "text_vision": ("text_vision_stage3", ("text", "vision"))}


def stage2_rates(args) -> str:
    """``--stage2-rates``, by default Xue et al.'s on a pretrained encoder and the ``small`` preset's on the
    BERT pre-trained here: the small preset's experts and head at 1e-3 make a pretrained encoder's speech
    and vision experts answer one label for every post (dev macro-F1 0.333 on multilingual-e5-small)."""
    return args.stage2_rates or ("small" if args.backbone.resolve() == DEFAULT_BACKBONE.resolve() else "paper")


def run_config(args, modalities: tuple[str, ...] | None = None) -> dict:
    """The ``small`` preset with this run's speech, seed, backbone layers, text length, stage-1 loss,
    stage-2 rates, stage-3 rate and epochs; ``modalities`` for a text-only or ablated model."""
    from mmbert.presets import STAGES, load_run_config

    run = load_run_config("small")
    run["train"]["stage1"]["loss"] = args.stage1_loss
    if stage2_rates(args) == "paper":
        run["train"]["stage2"].update({k: v for k, v in STAGES["stage2"].items() if k.startswith("lr_")})
    run["train"]["seed"] = args.seed
    tts = ({"name": "kokoro-onnx", "model": str(args.weights / "kokoro" / "kokoro-v1.0.int8.onnx"), "voice": VOICE}
           if args.tts == "kokoro-onnx" else {"name": args.tts})
    run["features"].update(tts={"name": "tone"} if args.quick else tts, whisper=str(args.weights / "whisper-base.pt"),
                           speech_cache=str(args.work / "speech"))
    if modalities:
        run["model"]["modalities"] = list(modalities)
    run["model"]["backbone_layers"] = args.backbone_layers
    if args.max_length:
        run["train"]["max_length"] = args.max_length
    if args.stage3_lr:
        run["train"]["stage3"]["lr"] = args.stage3_lr
    run["train"]["stage3"]["text_mask"] = args.stage3_text_mask
    run["train"]["stage3"]["term_mask"] = args.stage3_term_mask
    run["train"]["stage3"]["term_holdout"] = args.stage3_term_holdout
    for stage, epochs in zip(("stage1", "stage2", "stage3"), args.epochs or ([1] * 3 if args.quick else [])):
        run["train"][stage]["epochs"] = epochs
    return run


def stage_epochs(text: str) -> list[int]:
    """``--epochs``: N for every stage, or E1,E2,E3 (stage 3's is the text-only twin's too)."""
    epochs = [int(x) for x in text.split(",")]
    if len(epochs) not in (1, 3) or min(epochs) < 1:
        raise ValueError(f"{text!r}: give N or E1,E2,E3, each at least 1")
    return epochs * 3 if len(epochs) == 1 else epochs


def routing_figure(model_dir: Path, files: dict, out_dir: Path, features: dict) -> dict:
    """Xue et al.'s Fig. 3 for the trained MMBERT over the test sets together, grouped by op."""
    from mmbert.loading import load_model
    from mmbert.routing import routing_analysis

    model, featurizer = load_model(str(model_dir), features)
    records = [r for name in TEST_SETS for _, r in read_records(str(files[f"test_{name}"]))]
    return routing_analysis(model, featurizer, records, str(out_dir))


def backbone_for(args, work: Path, corpus: Path) -> tuple[Path, dict]:
    """``--backbone`` where it is a complete encoder folder, else the ``small`` BERT pre-trained here (resumed
    if begun); and what it is (``bench.common.backbone_info``)."""
    from mmbert.presets import load_run_config
    from mmbert.pretrain import pretrain

    backbone = args.backbone
    given = (backbone / "config.json").exists() and not (backbone / "checkpoint").exists()
    if not given:
        backbone = work / "backbone"
    if not given and (not (backbone / "config.json").exists() or (backbone / "checkpoint").exists()):
        run = load_run_config("small")
        run["train"]["pretrain"]["epochs"] = args.pretrain_epochs
        pretrain(str(corpus), str(backbone), run, resume=resumable(backbone))
    return backbone, backbone_info(backbone, args.backbone_layers)


def train_mmbert(run: dict, files: dict, runs: Path, backbone: Path, name: str) -> dict:
    """MMBERT's three stages in turn into ``runs/NAME_stageN``; their training summaries."""
    training, previous = {}, backbone
    for stage in (1, 2, 3):
        out = runs / f"{name}_stage{stage}"
        training[out.name] = trained(stage, run, files, out, previous)
        previous = out
    return training


def train_all(args, files: dict, backbone: Path, runs: Path) -> tuple[dict, dict]:
    """MMBERT, the text-only twin and (``--ablation``) MMBERT on two modalities; MMBERT's run configuration
    and the training summaries."""
    mm = run_config(args)
    training = train_mmbert(mm, files, runs, backbone, "mmbert")
    training["text_only"] = trained(3, run_config(args, ("text",)), files, runs / "text_only", backbone,
                                    allow_skip=True)
    for name, (_, modalities) in (ABLATION.items() if args.ablation else ()):
        training.update(train_mmbert(run_config(args, modalities), files, runs, backbone, name))
    return mm, training


def arguments():
    ap = parser(__doc__, out=RESULTS / "mmbert_cold.json", cold=True, work=WORK / "mmbert", weights=True)
    ap.add_argument("--train-posts", "--train", dest="train", type=int, default=2000,
                    help="training posts (each also cloaked)")
    ap.add_argument("--test", type=int, default=1000, help="test posts (each also cloaked by every op)")
    ap.add_argument("--targets", default=TEST_TARGETS, choices=("lexicon", "mined", "lexicon+mined"),
                    help="the test cloaks' targets (mined from the test posts, as attacks evaluate does)")
    ap.add_argument("--strength", default=TEST_STRENGTH, choices=("op", "whole", "poster"), help="the test cloaks'")
    ap.add_argument("--backbone", type=Path, default=DEFAULT_BACKBONE,
                    help="any transformers encoder folder (used when complete; default: bench.backbone's)")
    ap.add_argument("--backbone-layers", type=int, default=None, metavar="N", help="keep its first N layers [all]")
    ap.add_argument("--max-length", type=int, default=None, help="text tokens read [the small preset's: 64]")
    ap.add_argument("--stage3-lr", type=float, default=None,
                    help="stage 3's (and the text-only twin's) learning rate [the small preset's: 1e-4]")
    ap.add_argument("--stage3-text-mask", type=float, default=0.0, metavar="SHARE",
                    help="share of the training posts' text tokens masked in stage 3 and the twin's training, their "
                         "glyphs with them and the speech kept (mmbert.train) [0]")
    ap.add_argument("--stage3-term-mask", type=float, default=0.0, metavar="SHARE",
                    help="share of the training posts' terms (the lexicon's and those mined from the training posts) "
                         "masked whole in stage 3 and the twin's training, as --stage3-text-mask masks tokens [0]")
    ap.add_argument("--stage3-term-holdout", type=float, default=0.0, metavar="SHARE",
                    help="share of those terms never masked (the same at every seed), for bench.mmbert_heldout [0]")
    ap.add_argument("--stage1-loss", choices=("mse", "contrastive"), default="mse",
                    help="stage 1's alignment of the pooled speech and glyph encodings to the clean text's: the "
                         "Xue et al.'s error, or contrastive (each post nearest its own clean text; mmbert.train)")
    ap.add_argument("--stage2-rates", choices=("paper", "small"), default=None,
                    help="stage 2's learning rates: Xue et al.'s (aligners 1e-3, text expert 5e-6, speech and vision "
                         "experts and head 5e-5) or the small preset's (1e-3, 1e-4, 1e-3, 1e-3) [paper on a given "
                         "--backbone, small on the BERT pre-trained here]")
    ap.add_argument("--epochs", type=stage_epochs, default=None, metavar="N|E1,E2,E3",
                    help="epochs of every stage, or of stages 1, 2, 3 (3: the twin's too) [the small preset's: 3,5,8]")
    ap.add_argument("--ablation", action="store_true", help="also MMBERT on text + speech and on text + vision")
    ap.add_argument("--pretrain-posts", type=int, default=8000)
    ap.add_argument("--pretrain-epochs", type=int, default=1)
    ap.add_argument("--routing-out", type=Path, default=RESULTS / "mmbert_routing",
                    help="folder for routing.json and routing.png")
    ap.add_argument("--tts", choices=("kokoro-onnx", "espeak-ng"), default="kokoro-onnx",
                    help="the speech modality's TTS: Kokoro (2-3 s a post here) or eSpeak NG (20 ms)")
    ap.add_argument("--speech-workers", type=int, default=len(os.sched_getaffinity(0)), metavar="N",
                    help="processes that speak and encode the run's texts, the cores shared among them [one a core]")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 40 posts, tone TTS instead of Kokoro, 1 epoch a stage, results to the system's "
                         "temporary folder")
    ap.add_argument("--seed", type=int, default=0,
                    help="training seed of every model (initialisation, order, dropout); another seed trains "
                         "in WORK/runs_N_seedS beside seed 0's runs, on the same data, speech and backbone")
    return ap


def data_files(args, work: Path) -> tuple[dict, dict[str, Path]]:
    """The run's record files (train and dev cut to ``--train-posts``) and the data's other paths."""
    dev_posts = min(args.train // 5, DEV_POSTS)
    paths = prepare(args.cold, work, max(args.train, 1000), DEV_POSTS, args.test, args.pretrain_posts,
                    targets=args.targets, strength=args.strength)
    files = {"train": head(paths["train"], 2 * args.train, work / f"train_{args.train}.jsonl"),
             "dev": head(paths["dev"], 2 * dev_posts, work / f"dev_{dev_posts}.jsonl"),
             **{f"test_{n}": paths[f"test_{n}"] for n in TEST_SETS}}
    return files, paths


def begun_with(saved: dict) -> dict:
    """A run's saved settings, where begun before a stage-3 setting existed, with that setting at its default
    (what it trained with)."""
    from mmbert.presets import STAGES

    return {**saved, "train": {**saved["train"], "stage3": {**STAGES["stage3"], **saved["train"]["stage3"]}}}


def checked_runs(args, work: Path, backbone: dict, run: dict) -> Path:
    """The folder of this run's models; a rerun into it must have the settings it was begun with (its
    finished stages are reused), else it stops: give another ``--work``."""
    runs = work / (f"runs_{args.train}" + ("_quick" if args.quick else "") + (f"_seed{args.seed}" if args.seed else ""))
    settings = {"backbone": backbone["path"], "backbone_layers": args.backbone_layers,
                "model": {k: v for k, v in run["model"].items() if k != "modalities"}, "train": run["train"],
                "tts": run["features"]["tts"], "test": args.test, "targets": args.targets, "strength": args.strength}
    saved = runs / "settings.json"
    if saved.exists() and begun_with(read_json(saved)) != json.loads(json.dumps(settings)):
        raise SystemExit(f"{runs} was begun with other settings ({saved}): give another --work for these")
    runs.mkdir(parents=True, exist_ok=True)
    write_result(saved, settings)
    return runs


def main() -> None:
    ap = arguments()
    args = ap.parse_args()
    if args.speech_workers < 1:
        ap.error(f"--speech-workers {args.speech_workers}: give at least 1")
    if args.quick:
        args.train, args.out, args.routing_out = 40, Path(tempfile.gettempdir()) / "mmbert_cold_quick.json", \
            Path(tempfile.gettempdir()) / "mmbert_routing"
    weight_files(ap, args.weights, "whisper-base.pt",
                 *(["kokoro/kokoro-v1.0.int8.onnx"] if args.tts == "kokoro-onnx" and not args.quick else []))
    import torch

    started, work = time.time(), args.work
    files, paths = data_files(args, work)
    backbone, backbone_figures = backbone_for(args, work, paths["pretrain_corpus"])
    runs = checked_runs(args, work, backbone_figures, run_config(args))
    speech = speech_step(run_config(args), files, work, args.speech_workers)
    mm, training = train_all(args, files, backbone, runs)
    results, predictions = {}, {}
    for model, (folder, _) in {**MODELS, **(ABLATION if args.ablation else {})}.items():
        results[model], predictions[model] = evaluate(runs / folder, files, mm["features"])
    labels = np.array([r["label"] for _, r in read_records(str(files["test_clean"]))])
    report = {
        "quick": args.quick, "seed": args.seed, "tts": mm["features"]["tts"],
        "what": f"MMBERT (text + {args.tts} speech + glyph CNN) vs the same backbone text-only, COLD",
        "posts": {"train_posts": args.train, "train_examples": 2 * args.train,
                  "dev_examples": 2 * min(args.train // 5, DEV_POSTS), "test_posts": len(labels), "post_chars": "8-32"},
        "test_cloaks": read_json(paths["test_cloaks"]), "backbone": backbone_figures, "training": training,
        "speech": speech, "settings": {"stage_settings": mm["train"], "model": mm["model"]},
        "results": results, "goal_half_the_drop": half_the_drop(results),
        "bootstrap_95": bootstrap_drops(labels, predictions),
        "routing": routing_figure(runs / "mmbert_stage3", files, args.routing_out, mm["features"]),
        "predictions": predictions_text(labels, predictions),
        "seconds": round(time.time() - started, 1), "torch_threads": torch.get_num_threads(),
        "machine": machine_info(("torch", "transformers")),
    }
    write_result(args.out, report)
    print_table(report)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
