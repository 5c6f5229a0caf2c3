"""The three-stage trainer (Xue et al. 2025, §3.3, Appendix A), under Hugging Face Accelerate.

Stage 1, aligners: everything but the aligners (and the glyph CNN) frozen. The aligned speech and
    vision tokens of the *cloaked* text, encoded by the frozen backbone, should match the backbone's
    encoding of the *clean* text (mean over tokens; ``stage1.loss``: ``mse``, Xue et al.'s error, or
    ``contrastive``: each post's encoding nearer its own clean text than the batch's other posts');
    vision tokens also match the clean text's word embeddings token by token where the two
    tokenisations have the same length.
Stage 2, experts: each expert learns its own modality through one shared classification head:
    text expert on the text alone, speech expert on [CLS] + speech tokens, vision expert on [CLS] +
    vision tokens (cross-entropy summed). The first ``head_warmup_epochs`` train the head on text
    only, so the other modalities learn to reach a head that already knows the task. A text-only model
    put through stage 2 (from the backbone, skipping stage 1) gets the same updates of its text path at
    the same rates: a twin trained on MMBERT's budget. A ``dense`` model's one feed-forward learns every
    modality at the text expert's rate.
Stage 3, MMBERT tuning: all parts, all modalities, the router free: cross-entropy + aux weight x
    load-balancing loss. One learning rate with per-group overrides. ``stage3.text_mask`` (0 by default)
    replaces that share of each training post's text tokens by the tokenizer's mask token, and with them
    their glyphs (looked up by the same ids), the speech left as it was: what a homophone does to a post,
    so the mixture learns to read the speech where the text no longer says the word. ``stage3.term_mask``
    (0 by default) masks whole terms instead, each with that probability: the default lexicon's terms and
    those mined from the training posts (``cloak.mining``), found in each post as a homophone finds its
    target, since posters cloak a whole term, not a random character; ``stage3.term_holdout`` keeps a
    share of those terms (the same at every seed) never masked, for a test of terms the masks never
    touched. Each example's masks come from a generator seeded by (seed, its line in the training file,
    epoch): a text-only model (the twin) trained with the same settings on the same file masks the very
    same positions, as word dropout.

Groups of parameters (for learning rates and freezing): ``aligners`` (aligners, glyph CNN: it trains in
stage 1 only, then becomes a frozen table of its features, see ``MMBertModel.freeze_vision_encoder``),
``expert_text`` / ``expert_speech`` / ``expert_vision``, ``routers``, ``head`` (pooler, classifier),
``backbone`` (embeddings, attention, layer norms).

Every epoch ends with a dev evaluation, an atomic checkpoint and a log entry; the best epoch's model is
saved to the output folder (``save_pretrained``); training stops early after ``patience`` epochs without
improvement. Within an epoch a checkpoint is also written every ``checkpoint_minutes`` (default 10; 0 =
after every batch), so a kill loses at most that much work: ``--resume`` continues from the last
checkpoint with the same data order and random state, as if never stopped.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from cloak.common.io import known_labels, read_records, write_atomic
from cloak.mining import build_targets
from cloak.targets import Lexicon

from .checkpoint import save_model
from .folder import is_mmbert, label_count
from .inference import predict
from .loading import make_featurizer, model_for_stage, saved_features
from .loop import LoopSettings, train_epochs
from .metrics import classification_metrics, useless_reason
from .modeling import SPEECH, VISION, MMBertForSequenceClassification
from .presets import GROUPS, check_run_config



def parameter_group(name: str, modalities: list[str]) -> str:
    if name.startswith(("mmbert.speech_aligner.", "mmbert.vision_aligner.", "mmbert.vision_encoder.")):
        return "aligners"
    if ".moe.experts." in name:
        return "expert_" + modalities[int(name.split(".moe.experts.")[1].split(".")[0])]
    if ".moe.router." in name:
        return "routers"
    if name.startswith(("mmbert.pooler.", "classifier.")):
        return "head"
    return "backbone"


def stage_learning_rates(stage: int, settings: dict) -> dict[str, float]:
    """Learning rate of each group that trains in ``stage``; groups left out stay frozen."""
    s = settings[f"stage{stage}"]
    if stage == 1:
        return {"aligners": s["lr"]}
    if stage == 2:
        return {"aligners": s["lr_aligners"], "expert_text": s["lr_text_expert"], "expert_speech": s["lr_experts"],
                "expert_vision": s["lr_experts"], "head": s["lr_head"]}
    overrides = dict(s["lr_overrides"])
    experts = overrides.pop("experts", None)
    rates = {g: s["lr"] for g in GROUPS}
    if experts is not None:
        rates.update({g: experts for g in GROUPS if g.startswith("expert_")})
    rates.update(overrides)
    return rates


def optimizer_groups(model: MMBertForSequenceClassification, rates: dict[str, float], weight_decay: float):
    """AdamW groups by learning rate; parameters of frozen groups get ``requires_grad=False``."""
    groups: dict[str, list] = {}
    for name, param in model.named_parameters():
        group = parameter_group(name, model.config.modalities)
        param.requires_grad_(group in rates)
        if group in rates:
            groups.setdefault(group, []).append(param)
    return [{"params": params, "lr": rates[g], "weight_decay": weight_decay, "name": g}
            for g, params in groups.items()]


def _pooled(hidden: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    keep = keep.unsqueeze(-1).to(hidden.dtype)
    return (hidden * keep).sum(1) / keep.sum(1).clamp(min=1.0)


def unexplained_variance(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MSE over rows of (n, dim), divided by the targets' variance across the rows: the share of their
    variance left unexplained, so predicting the mean row scores 1 whatever the targets' scale. A
    single row (a batch of one) has no variance: it is divided by its mean square instead."""
    spread = target.var(0, unbiased=False).mean() if len(target) > 1 else target.pow(2).mean()
    return F.mse_loss(pred, target) / spread.clamp(min=1e-12)


def contrastive_loss(pred: torch.Tensor, target: torch.Tensor, temperature: float = 0.05) -> torch.Tensor:
    """InfoNCE over a batch: row i of ``pred`` should be nearer (cosine, after centring each side on its
    batch mean) row i of ``target`` than any other row. On multilingual-e5-small the MSE term left a
    post's speech as near every clean post as its own (retrieval@1 0.03 after 150 steps, 0.11 with
    this); a pretrained encoder's pooled outputs differ across posts in a few directions that an MSE,
    dominated by the rest, does not pull toward. A batch of one has no other rows: its MSE instead."""
    if len(pred) < 2:
        return unexplained_variance(pred, target)
    a = F.normalize(pred - pred.mean(0), dim=-1)
    b = F.normalize(target - target.mean(0), dim=-1)
    return F.cross_entropy(a @ b.T / temperature, torch.arange(len(a), device=a.device))


ALIGNMENT_LOSSES = {"mse": unexplained_variance, "contrastive": contrastive_loss}


def alignment_loss(model, batch: dict, modalities: list[str],
                   pooled_loss: Callable = unexplained_variance) -> torch.Tensor:
    """Stage 1: cloaked speech / vision, through the frozen backbone, against the clean text;
    ``pooled_loss`` compares the pooled encodings (``ALIGNMENT_LOSSES``).

    The MSE terms are scale-free (:func:`unexplained_variance`). A plain MSE let every glyph collapse to one
    vector: a weak backbone's word embeddings vary by about 0.02 per dimension, so matching their mean
    already left almost no loss to remove."""
    with torch.no_grad():
        clean = model(batch["source_ids"], batch["source_mask"], modalities=("text",), expert=0)
        target = _pooled(clean.last_hidden_state, clean.attention_mask)
    losses = []
    for modality, token_type in (("speech", SPEECH), ("vision", VISION)):
        if modality not in modalities or (modality == "speech" and "speech_features" not in batch):
            continue
        out = model(batch["input_ids"], batch["attention_mask"], batch.get("speech_features"),
                    batch.get("speech_mask"), modalities=(modality,), expert=model.config.expert_of(modality))
        keep = out.attention_mask * (out.token_types == token_type)
        losses.append(pooled_loss(_pooled(out.last_hidden_state, keep), target))
        if modality == "vision":  # token by token, where cloaked and clean tokenise to the same length
            same = batch["attention_mask"].sum(1) == batch["source_mask"].sum(1)
            if same.any() and batch["input_ids"].shape == batch["source_ids"].shape:
                real = batch["attention_mask"][same].bool()
                losses.append(unexplained_variance(out.aligned_vision[same][real], clean.word_embeddings[same][real]))
    return torch.stack(losses).sum()


def expert_loss(model, batch: dict, modalities: tuple[str, ...]) -> torch.Tensor:
    """Stage 2: each modality alone through its own expert (a ``dense`` model's one feed-forward) and the
    shared head."""
    total = 0.0
    for modality in modalities:
        out = model(**batch, modalities=(modality,), expert=model.config.expert_of(modality))
        total = total + out.loss
    return total


def stage2_modalities(model, epoch: int, settings: dict, batch: dict) -> tuple[str, ...]:
    if epoch < settings["stage2"]["head_warmup_epochs"]:
        return ("text",)
    return tuple(m for m in model.config.modalities if m != "speech" or "speech_features" in batch)


def masked_text(input_ids: torch.Tensor, attention_mask: torch.Tensor, share: float, mask_id: int,
                keep_ids: list[int], seeds: list[int], term_ids: torch.Tensor | None = None,
                term_share: float = 0.0) -> torch.Tensor:
    """``input_ids`` with each real token but the special ones (``keep_ids``: [CLS], [SEP], ...) replaced
    by ``mask_id`` with probability ``share``, and every token of a term (``term_ids``: each token's term
    number in its post, 0 for none) with the term's probability ``term_share``, drawn once a term so that
    it goes whole. Row i draws from its own generator seeded ``seeds[i]`` (:func:`mask_seed`), over its
    real tokens only (padding is on the right), so an example's masks do not depend on the batch it is
    in, nor on the model: MMBERT and its twin mask the same positions."""
    candidates = attention_mask.bool() & ~torch.isin(input_ids, torch.tensor(keep_ids, device=input_ids.device))
    chosen = torch.zeros_like(candidates)
    for row, seed in enumerate(seeds):
        generator = torch.Generator().manual_seed(seed)
        length = int(attention_mask[row].sum())
        drawn = torch.rand(length, generator=generator) < share
        if term_ids is not None and term_share:
            terms = term_ids[row, :length].cpu()
            whole = torch.rand(int(terms.max()) + 1, generator=generator) < term_share
            whole[0] = False  # number 0 is no term
            drawn |= whole[terms]
        chosen[row, :length] = drawn.to(chosen.device)
    return input_ids.masked_fill(chosen & candidates, mask_id)


def mask_seed(seed: int, example: int, epoch: int) -> int:
    """The seed of one training example's stage-3 masks in one epoch (``example``: its line in the
    training file), the same for every model trained at ``seed`` on that file."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{example}:{epoch}".encode()).digest()[:8], "little")


def term_mask_targets(train_records: list[dict]) -> Lexicon:
    """The terms ``stage3.term_mask`` may mask whole: the lexicon's and those mined from the training records."""
    return build_targets("lexicon+mined", labelled=train_records)


def held_out(term: str, share: float) -> bool:
    """Whether ``term`` is among the ``share`` of terms ``stage3.term_holdout`` never masks. Chosen by a hash
    of the term, so every seed and every run holds out the same terms, and a test can cloak them
    (``bench.mmbert_heldout``)."""
    return int(hashlib.sha256(term.encode()).hexdigest()[:8], 16) < share * 16 ** 8


def masked_terms(terms: Lexicon, holdout: float) -> Lexicon:
    """The terms of ``terms`` that ``stage3.term_mask`` masks: all but those ``held_out`` at ``holdout``."""
    return terms.subset((t for t in terms.terms if not held_out(t, holdout)), f"{terms.name}, {holdout:g} held out")


def stage_loss(model, batch: dict, epoch: int, stage: int, settings: dict,
               tokenizer=None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(loss, aux loss or None) of a training batch in ``stage``; ``tokenizer`` gives stage 3's mask and
    special tokens when ``stage3.text_mask`` or ``stage3.term_mask`` is set."""
    if stage == 1:
        return alignment_loss(model, batch, model.config.modalities, ALIGNMENT_LOSSES[settings["stage1"]["loss"]]), None
    if stage == 2:
        return expert_loss(model, batch, stage2_modalities(model, epoch, settings, batch)), None
    batch = dict(batch)
    term_ids, examples = batch.pop("term_ids", None), batch.pop("examples", None)
    share, term_share = settings["stage3"]["text_mask"], settings["stage3"]["term_mask"]
    if share or term_share:
        seeds = [mask_seed(settings["seed"], example, epoch) for example in examples.tolist()]
        batch["input_ids"] = masked_text(batch["input_ids"], batch["attention_mask"], share, tokenizer.mask_token_id,
                                         tokenizer.all_special_ids, seeds, term_ids, term_share)
    out = model(**batch)
    return out.loss, out.aux_loss


def evaluate_stage(stage: int, model, batches, labels: np.ndarray, pooled_loss: Callable = unexplained_variance) -> dict:
    """Dev figures of a stage: alignment loss (stage 1), macro-F1 per modality and their mean (2),
    the full model's metrics (3). ``score`` is what early stopping maximises."""
    model.eval()
    if stage == 1:
        with torch.no_grad():
            losses = [alignment_loss(model, b, model.config.modalities, pooled_loss).item() for b in batches]
        return {"dev_alignment_loss": float(np.mean(losses)), "score": -float(np.mean(losses))}
    if stage == 2:
        scores, counts = {}, {}
        for m in model.config.modalities:
            predicted = predict(model, batches, (m,), model.mmbert.expert_index(m), progress=False)["probs"].argmax(1)
            scores[f"dev_f1_{m}"] = classification_metrics(labels, predicted)["f1"]
            counts[m] = _counts(predicted)
        # the text expert through the head is what a stage-2 model answers with
        return {**scores, "dev_f1": scores["dev_f1_text"], "dev_predicted": counts["text"],
                "score": float(np.mean(list(scores.values())))}
    predicted = predict(model, batches, progress=False)["probs"].argmax(1)
    metrics = classification_metrics(labels, predicted)
    return {**{f"dev_{k}": v for k, v in metrics.items()}, "dev_predicted": _counts(predicted), "score": metrics["f1"]}


def _counts(predicted: np.ndarray) -> dict[str, int]:
    found, counts = np.unique(predicted, return_counts=True)
    return {str(k): int(c) for k, c in zip(found.tolist(), counts.tolist())}


def useless_warning(log: list[dict], best_epoch: int | None, posts: int) -> str | None:
    """Why the model a stage saved (its best epoch) is useless on the dev posts, or None: one label for
    every post, or macro-F1 below 0.5 (stage 1 trains no classifier: None)."""
    entry = next((e for e in log if e.get("epoch") == best_epoch), None)
    if not entry or "dev_predicted" not in entry:
        return None
    return useless_reason(entry["dev_f1"], posts, entry["dev_predicted"], "dev posts")


def read_labelled(path: str, unique_ids: bool = False, model_dir: str | None = None) -> list[dict]:
    """Every record of a JSONL file, each with a label (an int); a bad line or an empty file is a
    RecordError, and so is a repeated id with ``unique_ids``, and a label the model of the MMBERT folder
    ``model_dir`` (if given) does not know."""
    numbered = read_records(path, labels=True, unique_ids=unique_ids)
    if model_dir is not None:
        numbered = known_labels(numbered, label_count(model_dir), path, f"the model in {model_dir}")
    return [record for _, record in numbered]


def train_stage(stage: int, run: dict, train_path: str, dev_path: str, out_dir: str, from_dir: str | None = None,
                resume: bool = False, allow_skip: bool = False, progress: bool | None = None,
                on_checkpoint: Callable[[dict], None] | None = None) -> dict:
    """Train one stage; the best model lands in ``out_dir``. Returns the final log entry plus
    ``best_score``. ``on_checkpoint(state)`` is called after each checkpoint is written (``state``:
    finished ``epoch``, batches ``step`` done of the next one, best score, ...)."""
    if stage not in (1, 2, 3):
        raise ValueError(f"stage must be 1, 2 or 3, not {stage}")
    run = check_run_config(run)
    settings = run["train"]
    seed = settings["seed"]
    # The data first: a bad file fails in a second, before any model is loaded or folder made. A stage that
    # continues a model (stages 2 and 3) keeps its labels.
    continued = from_dir if is_mmbert(from_dir) else None
    train_records = read_labelled(train_path, model_dir=continued)
    dev_records = read_labelled(dev_path, model_dir=continued)
    num_labels = label_count(continued) if continued else max(r["label"] for r in train_records + dev_records) + 1
    if num_labels < 2:
        raise ValueError(f"{train_path} and {dev_path} have one label (0) only: a classifier needs two")

    model, tokenizer = model_for_stage(stage, run, from_dir, allow_skip, num_labels, progress, seed)
    max_length = settings["max_length"]
    if max_length > model.config.positions:
        raise ValueError(f"train.max_length ({max_length}) is longer than the model's position table "
                         f"({model.config.positions} positions)")
    model.config.features = saved_features(run["features"])
    tokenizer.model_max_length = max_length  # saved with the model: inference cuts texts as training did
    featurizer = make_featurizer(model, tokenizer, run["features"], max_length)
    stage3 = settings["stage3"]
    if stage == 3 and (stage3["text_mask"] or stage3["term_mask"]) and tokenizer.mask_token_id is None:
        raise ValueError("train.stage3.text_mask and term_mask need a tokenizer with a mask token; this one has none")
    terms = (masked_terms(term_mask_targets(train_records), stage3["term_holdout"])
             if stage == 3 and stage3["term_mask"] else None)
    train_examples = featurizer.encode(train_records, labels=True, progress=progress,
                                       terms=terms.find if terms else None)
    if stage == 3 and (stage3["text_mask"] or stage3["term_mask"]):
        for number, example in enumerate(train_examples):
            example["example"] = number  # what its masks are seeded by (mask_seed)
    dev_examples = featurizer.encode(dev_records, labels=True, progress=progress)
    dev_labels = np.array([e["labels"] for e in dev_examples])

    # Not sharded: every process scores the whole dev set, so all take the same early-stopping decision.
    dev_loader = torch.utils.data.DataLoader(dev_examples, batch_size=settings["batch_size"],
                                             collate_fn=featurizer.collate)

    def save(model, accelerator) -> None:
        model.config.stage = stage
        save_model(out_dir, model, tokenizer, accelerator)

    loop = LoopSettings.of(settings, epochs=settings[f"stage{stage}"]["epochs"], seed=seed)
    pooled_loss = ALIGNMENT_LOSSES[settings["stage1"]["loss"]]
    groups = optimizer_groups(model, stage_learning_rates(stage, settings), settings["weight_decay"])
    loss = functools.partial(stage_loss, stage=stage, settings=settings, tokenizer=tokenizer)
    result = train_epochs(model, loss, train_examples,
                          featurizer.collate, groups, lambda m: evaluate_stage(stage, m, dev_loader, dev_labels, pooled_loss),
                          save, out_dir, loop, resume=resume, progress=progress, on_checkpoint=on_checkpoint,
                          desc=f"stage {stage}")
    log = result["log"]
    warning = useless_warning(log, result["best_epoch"], len(dev_records))
    if result["main_process"]:
        summary = {"stage": stage, "epochs_run": result["epochs_run"], "best_epoch": result["best_epoch"],
                   "best_score": result["best_score"], "train": train_path, "dev": dev_path,
                   "from": from_dir, "processes": result["processes"], "run_config": run,
                   # the coverage of term_mask: how many training posts hold a term it can mask
                   **({"term_mask_terms": len(terms), "term_mask_posts": sum(any(e["term_ids"]) for e in train_examples)}
                      if terms else {}),
                   **({"warning": warning} if warning else {})}
        write_atomic(os.path.join(out_dir, "training.json"), json.dumps(summary, indent=1).encode())
    return {**(log[-1] if log else {}), "best_score": result["best_score"], "best_epoch": result["best_epoch"],
            "warning": warning}
