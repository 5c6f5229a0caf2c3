"""Benchmark of MMBERT's speed: training examples/s and inference posts/s, MMBERT vs the same backbone text-only.

Run from the repository root (no weights needed: the models are freshly initialised; speed does not
depend on what the weights are, except top_k=1's routing, see below)::

    .venv/bin/python -m bench.mmbert_speed           # full run (~4-8 min)
    .venv/bin/python -m bench.mmbert_speed --quick   # smoke run (~1 min)

Target (the issue): the dense 3-expert MoE costs at most 2.5x text-only per training step. MMBERT: Xue
et al., "MMBERT: Scaled Mixture-of-Experts Multimodal BERT for Robust Chinese Hate Speech Detection
under Cloaking Perturbations", 2025, arXiv:2508.00760.

Models: the ``small`` preset's shape (``load_run_config("small")["model"]``: hidden 256, 4 layers,
4 heads, intermediate 512, glyph-CNN vision over 32 px glyphs, speech_dim 512), vocabulary of the real
tokenizer (``mmbert.tokenization.build_tokenizer``, 23,045 entries), 2 labels, three variants built
with the same ``torch.manual_seed``:

- ``text``: ``modalities=["text"]``, i.e. a plain BERT (one expert, no router, no aligners): "the same
  backbone text-only";
- ``dense``: MMBERT, text + speech + vision, ``moe_top_k=0`` (every token through all three experts,
  weighted: Xue et al.'s MoE);
- ``top1``: MMBERT, ``moe_top_k=1`` (each token through its top expert only);
- ``one_ffn``: the dense model's input (text + speech + vision tokens) with every token forced through
  expert 0 alone (no router): the cost of the three-modality sequence without any mixture, a floor
  for every MoE variant.

Vision as stage 3 trains it: the glyph CNN over the vocabulary's real glyph images
(``mmbert.vision.glyph_images``, cached on disk after the first call) frozen into a table of its
features (``MMBertModel.freeze_vision_encoder``, what ``mmbert train --stage 2`` does), so the vision
modality costs a lookup plus the aligner. The CNN's own forward + backward over each batch's distinct
tokens, which only stage 1 pays, is timed as a component.

Data: COLD test posts (``cloak.convert.read_dataset("cold", ...)``) of 8 to 32 characters (the length of
the MMBERT benchmark's training posts, ``bench.mmbert_data``), shuffled with ``random.Random(seed)``,
the first ``batches x batch_size``; encoded by ``mmbert.data.Featurizer`` (max_length 64) and collated
into fixed batches of 32. Every variant sees exactly the same batches (the text-only model ignores the
speech tensors). "Cached features": the speech features are precomputed before timing, as training
reads them from the feature cache; here they are random float16 arrays (values do not change the cost)
of the realistic number of pooled tokens: a post of n characters speaks for n / ``--chars-per-second``
seconds (default 4.3), Whisper gives 50 frames a second, pooled as ``mmbert.speech_features.pool_frames``
does with stride 8 and at most 32 tokens (so about min(32, ceil(50 * seconds / 8)) tokens).

Measured, in one process, interleaved: each round runs every variant in turn (the order rotates from round
to round), first training then inference, so the shared machine's load hits all variants alike.

1. Training step: ``model.train()``, forward with labels (loss = CE, plus 0.01 x the load-balancing loss
   for MMBERT), backward, ``AdamW.step()``, ``zero_grad()``; parameter groups and learning rates as
   ``mmbert train`` stage 3 (``optimizer_groups`` / ``stage_learning_rates``), every parameter trained.
   Examples/s = batch size x steps / seconds. The mean seconds of forward, backward and optimizer
   (step + zero_grad) per step are recorded too.
2. Inference: ``model.eval()`` under ``torch.no_grad()``, forward only; posts/s.
3. Components (dense model, training mode, forward + backward without an optimizer step): the vision path
   (table lookup + aligner), the speech aligner, and stage 1's glyph CNN, to see where the extra cost goes.

Threads: one torch thread by default (``--threads``). On this shared 2-core machine, with other jobs
running (load average 7), two threads made every step many times slower and erratic (text-only training
step 4.7 s instead of 0.22 s, AdamW step 2.0 s instead of 0.05 s) and squeezed the dense / text ratio
from 6.9x to 2.0x, flipping the verdict: OpenMP's threads wait for each other at every operation while
the OS runs someone else on the other core, a fixed cost per operation rather than per FLOP. One thread
is immune to that; use ``--threads 2`` only on an otherwise idle machine. The load average at start and
end is recorded, and ``busy`` says whether the load at start left fewer idle cores than threads.

Each variant is warmed up (``--warmup`` training steps and inference batches) before the first round.
Reported per variant: median and best (fastest) round; ratios MMBERT / text-only as time per step, both
the median of the per-round ratios (the headline, within-round so load drifts cancel) and the ratio of
the medians. Note that top1's cost depends on how the router spreads tokens over the experts: the
models are not trained (a fresh init plus the benchmark's own steps), so the share of tokens whose top
expert is each expert, per layer, is reported with the figures. Also recorded: tokens per example of each
modality, parameter counts, torch threads.
"""
from __future__ import annotations

import math
import os
import random
import statistics
import time

import numpy as np

from bench.common import RESULTS, cold_records, log, machine_info, parser, print_summary, write_result

TARGET_DENSE_RATIO = 2.5
MIN_CHARS, MAX_CHARS = 8, 32
VARIANTS = ("text", "one_ffn", "dense", "top1")
MIXED = VARIANTS[1:]  # the variants that read all three modalities
FRAMES_PER_SECOND = 50


def speech_tokens(n_chars: int, chars_per_second: float, pool: int, max_tokens: int) -> int:
    """Pooled tokens of a post's speech, as ``pool_frames`` makes them from Whisper's 50 frames/s."""
    frames = max(1, math.ceil(FRAMES_PER_SECOND * n_chars / chars_per_second))
    stride = max(pool, math.ceil(frames / max_tokens))
    return math.ceil(frames / stride)


def summary(xs: list[float]) -> dict:
    return {"median": float(statistics.median(xs)), "best": float(max(xs)), "worst": float(min(xs)),
            "mean": float(np.mean(xs)), "n_rounds": len(xs)}


def build_models(run: dict, vocab_size: int, glyphs: np.ndarray, seed: int) -> dict:
    import torch

    from mmbert.configuration import MMBertConfig
    from mmbert.modeling import MMBertForSequenceClassification

    shape = {k: v for k, v in run["model"].items() if k != "backbone"}
    specs = {"text": {"modalities": ["text"], "moe_top_k": 0},
             "one_ffn": {"modalities": ["text", "speech", "vision"], "moe_top_k": 0},
             "dense": {"modalities": ["text", "speech", "vision"], "moe_top_k": 0},
             "top1": {"modalities": ["text", "speech", "vision"], "moe_top_k": 1}}
    models, glyph_cnn = {}, None
    for name in VARIANTS:
        torch.manual_seed(seed)
        config = MMBertConfig(vocab_size=vocab_size, num_labels=2, **specs[name], **shape)
        model = MMBertForSequenceClassification(config)
        if "vision" in config.modalities:
            model.mmbert.vision_encoder.glyphs.copy_(torch.from_numpy(glyphs))
            glyph_cnn = glyph_cnn or model.mmbert.vision_encoder
            model.mmbert.freeze_vision_encoder()  # as stages 2 and 3 train it
        models[name] = model
    return models, glyph_cnn


def make_optimizer(model, run: dict):
    import torch

    from mmbert.train import optimizer_groups, stage_learning_rates

    rates = stage_learning_rates(3, run["train"])
    return torch.optim.AdamW(optimizer_groups(model, rates, run["train"].get("weight_decay", 0.01)))


def train_steps(model, optimizer, batches: list[dict], start: int, steps: int,
                split: dict[str, float] | None = None) -> float:
    """Seconds for ``steps`` training steps over the batches from index ``start`` on (cyclically);
    ``split`` (if given) accumulates the seconds of forward, backward and optimizer (step + zero_grad)."""
    model.train()
    split = split if split is not None else {}
    t0 = time.perf_counter()
    for k in range(steps):
        a = time.perf_counter()
        out = model(**batches[(start + k) % len(batches)])
        b = time.perf_counter()
        out.loss.backward()
        c = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        d = time.perf_counter()
        for key, seconds in (("forward", b - a), ("backward", c - b), ("optimizer", d - c)):
            split[key] = split.get(key, 0.0) + seconds
    return time.perf_counter() - t0


def infer_batches(model, batches: list[dict], start: int, steps: int) -> float:
    import torch

    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        for k in range(steps):
            model(**batches[(start + k) % len(batches)])
    return time.perf_counter() - t0


def component_steps(model, glyph_cnn, batches: list[dict], start: int, steps: int) -> dict[str, float]:
    """Forward + backward (no optimizer step) of the dense model's vision path (table lookup + aligner)
    and speech aligner alone, and of the glyph CNN that stage 1 trains over the batch's tokens."""
    model.train()
    out = {"vision_path": 0.0, "speech_aligner": 0.0, "glyph_cnn_stage1": 0.0}
    for k in range(steps):
        batch = batches[(start + k) % len(batches)]
        for key, part in (("vision_path", lambda: model.mmbert.aligned_vision(batch["input_ids"])),
                          ("speech_aligner", lambda: model.mmbert.aligned_speech(batch["speech_features"])),
                          ("glyph_cnn_stage1", lambda: glyph_cnn(batch["input_ids"]))):
            t0 = time.perf_counter()
            part().sum().backward()
            out[key] += time.perf_counter() - t0
    model.zero_grad(set_to_none=True)
    glyph_cnn.zero_grad(set_to_none=True)
    return out


def routing_shares(model, batches: list[dict]) -> list[list[float]]:
    """Per layer, the share of real tokens whose top expert is each expert (over all batches)."""
    import torch

    model.eval()
    counts = None
    with torch.no_grad():
        for batch in batches:
            out = model(**batch)
            real = out.attention_mask.bool()
            per_layer = torch.stack([torch.bincount(w.argmax(-1)[real], minlength=w.shape[-1])
                                     for w in out.routing]).double()
            counts = per_layer if counts is None else counts + per_layer
    return (counts / counts.sum(-1, keepdim=True)).round(decimals=4).tolist()


def parameter_counts(model, variant: str) -> dict:
    from mmbert.train import parameter_group

    groups: dict[str, int] = {}
    for name, p in model.named_parameters():
        g = parameter_group(name, model.config.modalities)
        groups[g] = groups.get(g, 0) + p.numel()
    counts = {"total": sum(p.numel() for p in model.parameters()),
              "without_word_embeddings": sum(p.numel() for n, p in model.named_parameters()
                                             if "word_embeddings" not in n),
              "by_group": groups}
    log(f"  {variant}: {counts['total'] / 1e6:.2f} M parameters ({counts['without_word_embeddings'] / 1e6:.2f} M "
        f"without word embeddings)")
    return counts


# ---------------------------------------------------------------------------------------------- setup

def arguments():
    ap = parser(__doc__, out=RESULTS / "mmbert_speed.json", cold=True)
    ap.add_argument("--quick", action="store_true", help="smoke run (~1 min): fewer rounds and steps")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 9, --quick 2)")
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps / inference batches per variant per round (default 6, --quick 2)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps per variant (default 3, --quick 1)")
    ap.add_argument("--batches", type=int, default=8, help="distinct batches, cycled (default 8)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--chars-per-second", type=float, default=4.3,
                    help="speaking rate that sets the number of speech tokens (default 4.3)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads (default 1: robust on a busy machine, see above)")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def machine(threads: int) -> tuple[dict, bool]:
    """The machine, torch's threads, and whether the load at start left fewer idle cores than threads."""
    import torch

    info = machine_info(("torch", "transformers", "numpy"))
    info["torch_threads"] = torch.get_num_threads()
    info["torch_interop_threads"] = torch.get_num_interop_threads()
    cpus = info["cpus_usable"] or info["cpu_count"] or 1
    busy = bool(info["loadavg_at_start"]) and info["loadavg_at_start"][0] + threads > cpus + 0.5
    log(f"machine: {info['cpu_count']} cpus, {info['cpu_model']}, load {info['loadavg_at_start']}, "
        f"torch threads {info['torch_threads']}")
    if busy and threads > 1:
        log(f"warning: load {info['loadavg_at_start'][0]:.1f} on {cpus} cpus: {threads} torch threads will "
            "stall on each other; figures will be erratic (use --threads 1)")
    return info, busy


def make_batches(args, ap, posts: list[dict], shape: dict, tokenizer) -> tuple[list[dict], list[dict], list[dict]]:
    """The same fixed batches for every variant: seeded COLD test posts of 8-32 characters, encoded, with
    random speech features of the length a post of theirs speaks for."""
    from mmbert.data import Featurizer

    random.Random(args.seed).shuffle(posts)
    records = posts[: args.batches * args.batch_size]
    if len(records) < args.batches * args.batch_size:
        ap.error(f"only {len(records)} COLD test posts of {MIN_CHARS}-{MAX_CHARS} characters")
    featurizer = Featurizer(tokenizer, args.max_length, speech=None)
    examples = featurizer.encode(records, labels=True)
    rng = np.random.default_rng(args.seed)
    for example, record in zip(examples, records):
        m = speech_tokens(len(record["text"]), args.chars_per_second, shape["speech_pool"],
                          shape["max_speech_tokens"])
        example["speech_features"] = rng.standard_normal((m, shape["speech_dim"])).astype(np.float16)
    batches = [featurizer.collate(examples[i:i + args.batch_size])
               for i in range(0, len(examples), args.batch_size)]
    return records, examples, batches


def token_counts(records: list[dict], examples: list[dict], batches: list[dict]) -> dict:
    text_tokens = [len(e["input_ids"]) for e in examples]
    sp_tokens = [len(e["speech_features"]) for e in examples]
    widths = {"text": float(np.mean([b["input_ids"].shape[1] for b in batches])),
              "speech": float(np.mean([b["speech_features"].shape[1] for b in batches]))}
    return {
        "per_example_mean": {"text": float(np.mean(text_tokens)), "speech": float(np.mean(sp_tokens)),
                             "vision": float(np.mean(text_tokens))},
        "per_example_mean_total": {"text_only": float(np.mean(text_tokens)),
                                   "mmbert": float(np.mean(text_tokens) * 2 + np.mean(sp_tokens))},
        "padded_sequence_length_mean": {"text_only": widths["text"],
                                        "mmbert": 2 * widths["text"] + widths["speech"]},
        "speech_tokens_min_max": [int(min(sp_tokens)), int(max(sp_tokens))],
        "chars_per_post_mean": float(np.mean([len(r["text"]) for r in records])),
        "note": "text counts [CLS] and [SEP]; vision has one token per text token; speech tokens from the "
                "speaking rate (see chars_per_second); padded length = the model's sequence width per batch, "
                "mean over batches",
    }


def glyph_table(tokenizer, size: int) -> tuple[np.ndarray, float]:
    """The vocabulary's glyph images (cached on disk after the first call) and the seconds they took."""
    from mmbert.tokenization import vocabulary
    from mmbert.vision import glyph_images

    t0 = time.perf_counter()
    glyphs = glyph_images(vocabulary(tokenizer), size, progress=False)
    glyph_s = time.perf_counter() - t0
    log(f"tokenizer: {len(tokenizer)} entries; glyph table {glyphs.shape} in {glyph_s:.1f} s")
    return glyphs, glyph_s


# ---------------------------------------------------------------------------------------------- timing

def warm_up(models: dict, optimizers: dict, glyph_cnn, batches: list[dict], variant_batches: dict,
            warmup: int) -> None:
    """Untimed steps of every variant, and one of the dense model's components."""
    for name in VARIANTS:
        train_steps(models[name], optimizers[name], variant_batches[name], 0, warmup)
        infer_batches(models[name], variant_batches[name], 0, warmup)
    component_steps(models["dense"], glyph_cnn, batches, 0, 1)


def timed_rounds(models: dict, optimizers: dict, glyph_cnn, batches: list[dict], variant_batches: dict,
                 rounds: int, steps: int) -> tuple[dict, dict, dict, dict]:
    """Every variant in turn each round (the order rotating), training then inference, then the dense
    model's components: seconds per round, and the training steps' forward / backward / optimizer split."""
    train_s = {name: [] for name in VARIANTS}
    train_split = {name: {} for name in VARIANTS}
    infer_s = {name: [] for name in VARIANTS}
    comp_s: dict[str, list[float]] = {"vision_path": [], "speech_aligner": [], "glyph_cnn_stage1": []}
    for r in range(rounds):
        order = list(VARIANTS[r % len(VARIANTS):] + VARIANTS[: r % len(VARIANTS)])
        first = (r * steps) % len(batches)
        for name in order:
            train_s[name].append(train_steps(models[name], optimizers[name], variant_batches[name], first, steps,
                                             train_split[name]))
        for name in order:
            infer_s[name].append(infer_batches(models[name], variant_batches[name], first, steps))
        for key, seconds in component_steps(models["dense"], glyph_cnn, batches, first, steps).items():
            comp_s[key].append(seconds)
        log(f"round {r + 1}/{rounds} ({' '.join(order)}): train s/step "
            + ", ".join(f"{n} {train_s[n][-1] / steps:.3f}" for n in VARIANTS)
            + "; infer s/batch " + ", ".join(f"{n} {infer_s[n][-1] / steps:.3f}" for n in VARIANTS))
    return train_s, train_split, infer_s, comp_s


def rates(times: dict[str, list[float]], unit: str, per_round: int, steps: int) -> dict:
    """Each variant's rate over the rounds, and its time per step against text-only's (and the mixtures'
    against one_ffn's: what the mixture itself costs on the same input)."""
    out = {}
    for name in VARIANTS:
        out[name] = {f"{unit}_per_s": summary([per_round / s for s in times[name]]),
                     "s_per_step_median": float(statistics.median(times[name]) / steps),
                     "round_seconds": [round(s, 4) for s in times[name]]}
    for name, base in [(m, "text") for m in MIXED] + [("dense", "one_ffn"), ("top1", "one_ffn")]:
        ratios = [a / b for a, b in zip(times[name], times[base])]
        out[f"ratio_{name}_vs_{base}"] = {
            "time_ratio_median_of_rounds": float(statistics.median(ratios)),
            "time_ratio_of_medians": float(statistics.median(times[name]) / statistics.median(times[base])),
            "time_ratio_best_vs_best": float(min(times[name]) / min(times[base])),
            "per_round": [round(x, 4) for x in ratios],
        }
    return out


def components(comp_s: dict[str, list[float]], train_dense: list[float], steps: int) -> dict:
    train_dense_median = statistics.median(train_dense)
    return {
        "what": "dense MMBERT, train mode, forward + backward only (no optimizer step), same batches",
        **{f"{key}_s_per_step_median": float(statistics.median(v) / steps) for key, v in comp_s.items()},
        **{f"{key}_share_of_dense_train_step": float(statistics.median(v) / train_dense_median)
           for key, v in comp_s.items()},
    }


def target(training: dict, tokens: dict) -> dict:
    dense_ratio = training["ratio_dense_vs_text"]["time_ratio_median_of_rounds"]
    return {"dense_train_time_ratio_max": TARGET_DENSE_RATIO,
            "dense_train_time_ratio": dense_ratio,
            "dense_train_time_ratio_best_vs_best": training["ratio_dense_vs_text"]["time_ratio_best_vs_best"],
            "judged_on": "median over rounds of (dense round seconds / text round seconds)",
            "met": bool(dense_ratio <= TARGET_DENSE_RATIO),
            "floor_one_ffn_train_time_ratio": training["ratio_one_ffn_vs_text"]["time_ratio_median_of_rounds"],
            "padded_token_ratio": tokens["padded_sequence_length_mean"]["mmbert"]
            / tokens["padded_sequence_length_mean"]["text_only"],
            "mixture_train_time_ratio_dense_vs_one_ffn":
                training["ratio_dense_vs_one_ffn"]["time_ratio_median_of_rounds"],
            "note": "one_ffn is the same three-modality input through a single feed-forward: what "
                    "the longer sequence costs before any mixture; the dense mixture runs three "
                    "feed-forwards on every token on top of it"}


def settings(args, shape: dict, vocab_size: int, batches: int, rounds: int, steps: int, warmup: int) -> dict:
    return {"preset": "small", "model_shape": {k: v for k, v in shape.items() if k != "backbone"},
            "vocab_size": vocab_size, "batch_size": args.batch_size, "max_length": args.max_length,
            "batches": batches, "rounds": rounds, "steps_per_round": steps, "warmup_steps": warmup,
            "chars_per_second": args.chars_per_second, "seed": args.seed,
            "optimizer": "AdamW, stage-3 parameter groups and learning rates (mmbert.train)",
            "variants": {"text": "modalities=['text'] (plain BERT: one expert, no router)",
                         "one_ffn": "text+speech+vision, every token through expert 0 alone "
                                    "(no router): the cost of the longer sequence without a mixture",
                         "dense": "text+speech+vision, moe_top_k=0",
                         "top1": "text+speech+vision, moe_top_k=1"}}


def summary_rows(result: dict) -> list[tuple[str, str, str]]:
    training, inference, comp = result["training"], result["inference"], result["components"]
    rows = []
    for name in VARIANTS:
        t, i = training[name]["examples_per_s"], inference[name]["posts_per_s"]
        sp = training[name]["s_per_step_mean_split"]
        rows.append((f"{name}: train examples/s (median / best)", f"{t['median']:.1f} / {t['best']:.1f}",
                     (f"infer posts/s {i['median']:.1f} / {i['best']:.1f}; s/step fwd {sp['forward']:.3f} "
                      f"bwd {sp['backward']:.3f} opt {sp['optimizer']:.3f}")))
    for name in MIXED:
        tr, ir = training[f"ratio_{name}_vs_text"], inference[f"ratio_{name}_vs_text"]
        rows.append((f"{name} / text time per step (train)", f"{tr['time_ratio_median_of_rounds']:.2f}x",
                     (f"ratio of medians {tr['time_ratio_of_medians']:.2f}x; inference "
                      f"{ir['time_ratio_median_of_rounds']:.2f}x")))
    mix = training["ratio_dense_vs_one_ffn"]
    rows.append(("dense / one_ffn (the mixture alone)", f"{mix['time_ratio_median_of_rounds']:.2f}x",
                 "same three-modality input, train time per step"))
    rows.append(("target dense train ratio", f"<= {TARGET_DENSE_RATIO}", f"met: {result['target']['met']}"))
    rows.append(("dense: vision path / speech aligner (fwd+bwd)",
                 (f"{comp['vision_path_share_of_dense_train_step']:.0%} / "
                  f"{comp['speech_aligner_share_of_dense_train_step']:.0%}"), "of a dense training step"))
    rows.append(("stage 1's glyph CNN (fwd+bwd)", f"{comp['glyph_cnn_stage1_share_of_dense_train_step']:.0%}",
                 "of a dense training step"))
    return rows


# ----------------------------------------------------------------------------------------------- main

def main() -> None:
    ap = arguments()
    args = ap.parse_args()
    rounds, steps = args.rounds or (2 if args.quick else 9), args.steps or (2 if args.quick else 6)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 3)
    if not (args.cold / "test.csv").is_file():
        ap.error(f"COLD test file not found: {args.cold / 'test.csv'}")
    start = time.monotonic()
    import torch

    torch.set_num_threads(args.threads)
    from mmbert.presets import load_run_config
    from mmbert.tokenization import build_tokenizer

    info, busy = machine(args.threads)
    run = load_run_config("small")
    shape, tokenizer = run["model"], build_tokenizer()
    glyphs, glyph_s = glyph_table(tokenizer, shape["glyph_size"])
    posts = [r for r in cold_records(args.cold, "test") if MIN_CHARS <= len(r["text"]) <= MAX_CHARS]
    n_posts = len(posts)
    records, examples, batches = make_batches(args, ap, posts, shape, tokenizer)
    tokens = token_counts(records, examples, batches)
    log(f"{len(batches)} batches of {args.batch_size}; tokens/example text {tokens['per_example_mean']['text']:.1f}, "
        f"speech {tokens['per_example_mean']['speech']:.1f}, vision {tokens['per_example_mean']['vision']:.1f}")
    models, glyph_cnn = build_models(run, len(tokenizer), glyphs, args.seed)
    # one_ffn: the three modalities' sequence through one feed-forward (no router, no other expert).
    variant_batches = {name: [dict(b, expert=0) for b in batches] if name == "one_ffn" else batches
                       for name in VARIANTS}
    optimizers = {name: make_optimizer(m, run) for name, m in models.items()}
    params = {name: parameter_counts(m, name) for name, m in models.items()}
    warm_up(models, optimizers, glyph_cnn, batches, variant_batches, warmup)
    log(f"warm-up done ({warmup} steps each); {rounds} rounds x {steps} steps per variant")
    train_s, train_split, infer_s, comp_s = timed_rounds(models, optimizers, glyph_cnn, batches, variant_batches,
                                                         rounds, steps)
    training = rates(train_s, "examples", args.batch_size * steps, steps)
    for name in VARIANTS:
        training[name]["s_per_step_mean_split"] = {k: v / (rounds * steps) for k, v in train_split[name].items()}
    result = {
        "benchmark": "mmbert_speed", "machine": info, "quick": args.quick,
        "settings": settings(args, shape, len(tokenizer), len(batches), rounds, steps, warmup),
        "selection": f"COLD test.csv posts with {MIN_CHARS} <= len(text) <= {MAX_CHARS} ({n_posts}), "
                     f"shuffled with random.Random({args.seed}), first {len(records)}",
        "speech_features": "precomputed random float16 (tokens, 512) arrays, tokens = pooled Whisper frames "
                           f"of n_chars / {args.chars_per_second} s of speech (50 frames/s, pool "
                           f"{shape['speech_pool']}, at most {shape['max_speech_tokens']})",
        "glyph_table_s": glyph_s, "tokens": tokens, "parameters": params, "training": training,
        "inference": rates(infer_s, "posts", args.batch_size * steps, steps),
        "components": components(comp_s, train_s["dense"], steps),
        "routing_top_expert_share": {"experts": ["text", "speech", "vision"],
                                     "per_layer": {n: routing_shares(models[n], batches) for n in ("dense", "top1")},
                                     "note": "after the benchmark's training steps from a fresh init"},
        "target": target(training, tokens), "loadavg_at_end": list(os.getloadavg()), "busy": busy,
        "total_s": time.monotonic() - start,
    }
    write_result(args.out, result, indent=2)
    print_summary(summary_rows(result), args.out, result["total_s"], 16)


if __name__ == "__main__":
    main()
