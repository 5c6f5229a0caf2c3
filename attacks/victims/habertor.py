"""``habertor``: HABERTOR (Tran et al., EMNLP 2020, arXiv:2010.08865) as a victim, and its pre-training
on the user's corpus.

- A SentencePiece (unigram) vocabulary trained on the corpus (§4.1), run as a fast tokenizer so every
  token knows the characters it covers; the characters cloaks write (emoji, Latin letters, digits)
  are in it from the start, so a cloaked word is never an unknown token.
- Masked-LM pre-training with the masking factor tau (§4.3): each sequence is seen tau times an
  epoch, each copy with its own mask (positions sampled anew for each, so with replacement across
  copies), fixed from the seed so that a resumed run masks as the uninterrupted one.
- Fine-tuning with one ensemble of heads per source (``source_field``, §4.4) and adversarial training
  (§4.5): ``adaptive`` adds ``lambda_adv * L_adv - lambda_eps * ||eps||`` with a learnable
  per-dimension noise magnitude eps projected into [eps_low, eps_high] after every step; ``fgm`` uses
  a fixed scalar ``eps`` (Tran et al.'s Table 5 comparison); the adversarial loss is the gold label's on
  ``s + delta``, ``delta = eps * g / ||g||_2`` with ``g`` the gold loss's gradient on the post's token
  embeddings (norm over all its tokens, as the evaluator's FGM).

Posts from an unknown source get the mean of all the source nets, as Tran et al. prescribe for a new
source: so does every text of ``predict_proba``, which reads texts alone (as ``attacks evaluate`` calls it);
``predict_records`` reads each record's source (as ``attacks predict`` calls it).
"""
from __future__ import annotations

import dataclasses
import io
import os
import string
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from cloak.common.io import usual_permissions
from cloak.common.params import InstanceOf, Interval, Options
from mmbert.loop_settings import LoopSettings

from ..fgm import _norm
from ..nn.adversaries import ADVERSARIES, DEFAULT_ADVERSARY, Adversary
from ..nn.habertor_model import PRESETS, HabertorConfig, HabertorForClassification, HabertorForMaskedLM
from .base import Fitted, Settings, check_texts, register_victim
from .bert import HEAD_SHARE, HeadTailTokens, encode_head_tail, pad
from .neural import (ARCHITECTURE, WEIGHTS, Embedded, FineTunedVictim, NeuralTraining, read_json, save_tokenizer,
                     write_json)

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def cloak_alphabet() -> list[str]:
    """Characters cloaks write that a corpus of clean posts may lack: Latin letters, digits, and every
    code point of the emoji the ``emoji`` op uses."""
    from cloak.ops.emoji import emoji_tables

    names = emoji_tables()[0]
    chars = {ch for emojis in names.values() for e in emojis for ch in e}
    return sorted(chars | set(string.ascii_letters + string.digits))


def train_tokenizer(texts: Sequence[str], vocab_size: int):
    """A SentencePiece unigram vocabulary of ``vocab_size`` pieces (at least one for every character the
    texts and the cloaks use) trained on ``texts``, run as a transformers fast tokenizer with BERT's
    special tokens (the same pieces and scores: the same segmentation, with character offsets).
    SentencePiece's trainer is deterministic; no normalisation, so a full-width or look-alike letter a
    cloak writes stays itself."""
    import sentencepiece as spm
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    texts, alphabet = [t for t in texts if t], cloak_alphabet()
    characters = len(set(alphabet).union(*map(set, texts)))
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=proto, model_type="unigram",
        vocab_size=max(vocab_size, characters + len(SPECIAL_TOKENS) + 1), hard_vocab_limit=False,
        character_coverage=1.0, required_chars="".join(alphabet), normalization_rule_name="identity",
        add_dummy_prefix=False, remove_extra_whitespaces=False, max_sentence_length=1 << 20, minloglevel=2,
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="[PAD]", unk_piece="[UNK]",
        user_defined_symbols=SPECIAL_TOKENS[2:])
    pieces = spm.SentencePieceProcessor(model_proto=proto.getvalue())
    vocab = [(pieces.id_to_piece(i), pieces.get_score(i)) for i in range(pieces.get_piece_size())]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=pieces.unk_id(), byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="never")
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_input_names=["input_ids", "attention_mask"])


def load_tokenizer(directory: str):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(directory)


# -- pre-training ---------------------------------------------------------------------------------


@dataclasses.dataclass
class HabertorPretraining(Settings, LoopSettings):
    """How to pre-train (Tran et al.'s vocabulary of 40k, tau 10, lr 5e-5; fewer epochs than its 60):
    2% of the corpus is held out, and the epoch with the lowest held-out masked-LM loss is saved. The epoch
    loop's fields are ``mmbert.loop_settings.LoopSettings``'s (batches of 32, seed 0, a checkpoint every
    10 minutes by default)."""

    epochs: int = 5
    patience: int = 2
    warmup_ratio: float = 0.06
    vocab_size: int = 40000
    tau: int = 10
    lr: float = 5e-5
    max_length: int = 128
    mlm_probability: float = 0.15
    _parameter_constraints = {
        **LoopSettings._parameter_constraints, "vocab_size": Interval(int, len(SPECIAL_TOKENS) + 1),
        "tau": Interval(int, 1), "lr": Interval(float, 0, closed="neither"), "max_length": Interval(int, 8),
        "mlm_probability": Interval(float, 0, 1, closed="neither")}


class MaskedCopies:
    """Collates (sequence index, copy) pairs into masked-LM batches. Each copy is masked by BERT's rule
    (``probability`` of the tokens: 80% [MASK], 10% a random token, 10% kept; at least one a sequence)
    with a generator seeded by (seed, index, copy): tau different masks of every sequence, the same in
    every epoch and after a resume (RoBERTa's static masking, which Tran et al.'s tau follows)."""

    def __init__(self, sequences: Sequence[list[int]], tokenizer, probability: float, seed: int) -> None:
        self.sequences, self.probability, self.seed = sequences, probability, seed
        self.special = set(tokenizer.all_special_ids)
        self.mask_id, self.pad_id, self.vocab_size = tokenizer.mask_token_id, tokenizer.pad_token_id, len(tokenizer)

    def mask(self, index: int, copy: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.tensor(self.sequences[index])
        generator = torch.Generator().manual_seed((self.seed * 1_000_003 + index) * 1_009 + copy)
        maskable = torch.tensor([i not in self.special for i in self.sequences[index]])
        chosen = (torch.rand(len(ids), generator=generator) < self.probability) & maskable
        if not chosen.any() and maskable.any():
            chosen[maskable.nonzero()[0]] = True
        labels = torch.where(chosen, ids, -100)
        draw = torch.rand(len(ids), generator=generator)
        randoms = torch.randint(len(SPECIAL_TOKENS), self.vocab_size, (len(ids),), generator=generator)
        ids = torch.where(chosen & (draw < 0.8), self.mask_id, ids)
        ids = torch.where(chosen & (draw >= 0.8) & (draw < 0.9), randoms, ids)
        return ids, labels

    def __call__(self, items: Sequence[tuple[int, int]]) -> dict[str, torch.Tensor]:
        masked = [self.mask(index, copy) for index, copy in items]
        batch = pad([ids.tolist() for ids, _ in masked], self.pad_id)
        labels = torch.full_like(batch["input_ids"], -100)
        for row, (_, label) in enumerate(masked):
            labels[row, :len(label)] = label
        return {**batch, "labels": labels}


def pretrain_habertor(texts: Sequence[str], out_dir: str, model: HabertorConfig | None = None,
                      settings: HabertorPretraining | None = None, *, resume: bool = False,
                      progress: bool | None = None, on_checkpoint=None) -> dict:
    """Train a vocabulary on ``texts`` and pre-train a HABERTOR of shape ``model`` (VAFOQF by default;
    its vocabulary size comes from the tokenizer) by masked LM; writes ``config.json``, the weights
    and the tokenizer to ``out_dir`` (a ``--backbone`` for ``attacks train --model habertor``). Returns
    the epochs' log with the best epoch and its held-out loss."""
    from mmbert.loop import train_epochs

    settings = settings or HabertorPretraining()
    texts = [t for t in texts if t.strip()]
    if len(texts) < 10:
        raise ValueError(f"{len(texts)} texts; pre-training needs a corpus of at least 10")
    os.makedirs(out_dir, exist_ok=True)
    if resume and os.path.isfile(os.path.join(out_dir, "tokenizer.json")):
        tokenizer = load_tokenizer(out_dir)  # the vocabulary the checkpoint was trained with
    else:
        tokenizer = train_tokenizer(texts, settings.vocab_size)
        tokenizer.save_pretrained(out_dir)
    config = dataclasses.replace(model or HabertorConfig(), vocab_size=len(tokenizer),
                                 pad_token_id=tokenizer.pad_token_id)
    if settings.max_length > config.max_position:
        raise ValueError(f"max_length {settings.max_length} exceeds the model's {config.max_position} positions")
    torch.manual_seed(settings.seed)  # the new weights depend on the seed alone
    network = HabertorForMaskedLM(config)
    sequences = [[i for i, _ in tokens] for tokens in encode_head_tail(tokenizer, texts, settings.max_length,
                                                                        HEAD_SHARE)]
    held_out = max(1, len(sequences) // 50)
    dev = [(index, 0) for index in range(held_out)]
    train = [(index, copy) for index in range(held_out, len(sequences)) for copy in range(settings.tau)]
    collator = MaskedCopies(sequences, tokenizer, settings.mlm_probability, settings.seed)

    def loss(m, batch: dict, epoch: int) -> torch.Tensor:
        return m.masked_lm_loss(batch["input_ids"], batch["attention_mask"], batch["labels"])

    def held_out_loss(m) -> dict:
        device = next(m.parameters()).device
        with torch.no_grad():
            losses = [loss(m, {k: v.to(device) for k, v in collator(dev[i:i + settings.batch_size]).items()}, 0).item()
                      for i in range(0, len(dev), settings.batch_size)]
        value = sum(losses) / len(losses)
        return {"dev_mlm_loss": value, "score": -value}

    def save(m, accelerator) -> None:
        from safetensors.torch import save_model

        if accelerator.is_main_process:
            config.save_pretrained(out_dir)
            save_model(accelerator.unwrap_model(m), os.path.join(out_dir, WEIGHTS))
            usual_permissions([os.path.join(out_dir, WEIGHTS)])
            write_json(out_dir, "pretraining.json", settings.to_dict())

    groups = [{"params": list(network.parameters()), "lr": settings.lr, "weight_decay": 0.01, "name": "habertor"}]
    result = train_epochs(network, loss, train, collator, groups, held_out_loss, save, out_dir, settings, resume=resume,
                          progress=progress, on_checkpoint=on_checkpoint, desc="pretrain-habertor",
                          lengths=[len(sequences[index]) for index, _ in train])
    best = -result["best_score"] if result["best_score"] is not None else None
    return {"log": result["log"], "best_epoch": result["best_epoch"], "best_mlm_loss": best,
            "vocab_size": len(tokenizer), "texts": len(texts), "sequences_per_epoch": len(train)}


# -- the victim -----------------------------------------------------------------------------------


@dataclasses.dataclass
class HabertorVictimConfig(Settings):
    """backbone: a ``pretrain-habertor`` folder, or None for a new model of ``preset`` (``sizes`` over
    its shape) with a ``vocab_size`` vocabulary trained on the training texts (no pre-training);
    max_length, head_share: tokens read and how a long post is cut (as ``bert``); source_field: the
    record field naming a post's source (COLD's ``topic``), one ensemble of ``heads`` heads per source,
    pooled by ``pooling``."""

    backbone: str | None = None
    preset: str = "vafoqf"
    sizes: dict | None = None
    vocab_size: int = 8000
    max_length: int = 128
    head_share: float = HEAD_SHARE
    source_field: str | None = None
    heads: int = 2
    pooling: str = "min"
    _parameter_constraints = {"backbone": [InstanceOf(str), None], "preset": Options(*PRESETS),
                              "sizes": [InstanceOf(dict), None], "vocab_size": Interval(int, len(SPECIAL_TOKENS) + 1),
                              "max_length": Interval(int, 8), "head_share": Interval(float, 0, 1),
                              "source_field": [InstanceOf(str), None], "heads": Interval(int, 1),
                              "pooling": Options("min", "max", "mean")}


@dataclasses.dataclass
class HabertorTraining(NeuralTraining):
    """Wankmüller (2021)'s fine-tuning recipe (as every torch victim) plus adversarial training: ``adv`` is
    ``adaptive`` (learnable eps in [eps_low, eps_high], learnt at ``eps_lr``: at the model's 2e-5 it
    would barely leave eps_low), ``fgm`` (fixed ``eps``) or ``none``.

    eps is an absolute L2 length, so it only means something beside the embeddings' size. Tran et al.'s
    [1, 5] (and eps 1, eps_lr 0.01) are scaled here by 0.055: a COLD post's token embeddings have a
    median norm of 3.8 from a table initialised as BERT's (N(0, 0.02)), against 69 from torch's N(0, 1),
    where [1, 5] trained well. At [1, 5] the BERT-scale model is pushed 26-130% of a post's norm and
    collapses to one class (dev macro-F1 0.34)."""

    adv: str = DEFAULT_ADVERSARY
    eps_low: float = 0.05
    eps_high: float = 0.25
    eps: float = 0.05
    lambda_adv: float = 1.0
    lambda_eps: float = 1.0
    eps_lr: float = 5e-4
    _parameter_constraints = {**NeuralTraining._parameter_constraints, "adv": Options(*ADVERSARIES),
                              "eps_low": Interval(float, 0), "eps_high": Interval(float, 0),
                              "eps": Interval(float, 0), "lambda_adv": Interval(float, 0),
                              "lambda_eps": Interval(float, 0), "eps_lr": Interval(float, 0, closed="neither")}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eps_low > self.eps_high:
            raise ValueError(f"HabertorTraining: eps_low ({self.eps_low}) must be at most eps_high ({self.eps_high})")


@register_victim
class HabertorVictim(HeadTailTokens, FineTunedVictim):
    """HABERTOR fine-tuned with its multi-source ensemble heads and adversarial training (see the
    module docstring)."""

    kind = "habertor"
    summary = "HABERTOR: quaternion-factorised BERT, source ensemble heads, adaptive FGM training"
    Config = HabertorVictimConfig
    Training = HabertorTraining
    sources_ = Fitted()  # the source nets' names, in order: set by fit, or read by load

    def __init__(self, config: Settings | dict | None = None, training: Settings | dict | None = None) -> None:
        super().__init__(config, training)
        self._corpus: list[str] = []  # the training texts, for a vocabulary when there is no backbone

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, **kwargs) -> HabertorVictim:
        field = self.config.source_field
        if field:
            missing = [r.get("id", i) for i, r in enumerate(train) if r.get(field) in (None, "")]
            if missing:
                raise ValueError(f"{len(missing)} training records have no {field!r} (the source field), "
                                 f"e.g. record {missing[0]}")
        self.sources_ = sorted({str(r[field]) for r in train}) if field else []
        self._corpus = [r["text"] for r in train]
        return super().fit(train, dev, **kwargs)

    def _classifier(self, config: HabertorConfig, num_labels: int) -> nn.Module:
        c = self.config
        model = HabertorForClassification(config, num_labels, max(1, len(self.sources_)), c.heads, c.pooling)
        noise = self.adversary.noise(config.hidden_size, self.training)
        if noise is not None:
            model.noise = noise
        return model

    @property
    def adversary(self) -> Adversary:
        return ADVERSARIES[self.training.adv]

    def build(self, num_labels: int) -> nn.Module:
        from safetensors.torch import load_file

        c = self.config
        if c.backbone:
            self.tokenizer_ = load_tokenizer(c.backbone)
            config = HabertorConfig.from_pretrained(c.backbone)
            model = self._classifier(config, num_labels)
            encoder = {k.removeprefix("habertor."): v for k, v in load_file(os.path.join(c.backbone, WEIGHTS)).items()
                       if k.startswith("habertor.")}
            model.habertor.load_state_dict(encoder)
            return model
        self.tokenizer_ = train_tokenizer(self._corpus, c.vocab_size)
        config = HabertorConfig.preset(c.preset, **(c.sizes or {}), vocab_size=len(self.tokenizer_),
                                       pad_token_id=self.tokenizer_.pad_token_id)
        return self._classifier(config, num_labels)

    def architecture(self, directory: str) -> nn.Module:
        self.tokenizer_ = load_tokenizer(directory)
        saved = read_json(directory, ARCHITECTURE)
        self.sources_ = saved["sources"]
        return self._classifier(HabertorConfig.from_dict(saved["config"], f"{directory}/{ARCHITECTURE}"),
                                self.num_labels_)

    def save_architecture(self, directory: str) -> list[str]:
        names = save_tokenizer(self.tokenizer_, directory)
        config = self.model_.habertor.config.to_dict()
        return [write_json(directory, ARCHITECTURE, {"config": config, "sources": self.sources_}), *names]

    @property
    def max_length(self) -> int:
        return min(self.config.max_length, self.model_.habertor.config.max_position)

    # -- inputs ---------------------------------------------------------------------------------------

    def source_ids(self, sources: Sequence[str | None]) -> torch.Tensor:
        """Each source's net (-1: unknown, read by the mean of the nets)."""
        index = {s: i for i, s in enumerate(self.sources_)}
        return torch.tensor([index.get(str(s), -1) if s is not None else -1 for s in sources], dtype=torch.long)

    def batch(self, texts: Sequence[str], sources: Sequence[str | None] | None = None) -> dict[str, torch.Tensor]:
        return {**super().batch(texts), "source": self.source_ids(sources or [None] * len(texts))}

    def training_batch(self, records: Sequence[dict]) -> dict[str, torch.Tensor]:
        out, field = super().training_batch(records), self.config.source_field
        if field:
            out["source"] = self.source_ids([r.get(field) for r in records])
        return out

    def embed_batch(self, model: nn.Module, batch: dict) -> Embedded:
        embeds = model.habertor.embeddings.tokens(batch["input_ids"])
        return Embedded(embeds, batch["attention_mask"], {"input_ids": batch["input_ids"], "source": batch["source"]})

    def model_logits(self, model: nn.Module, embedded: Embedded) -> torch.Tensor:
        return model(embedded.mask, embedded.inputs["source"], inputs_embeds=embedded.embeds)

    def model_attentions(self, model: nn.Module, embedded: Embedded) -> tuple[torch.Tensor, list[torch.Tensor]]:
        return model(embedded.mask, embedded.inputs["source"], inputs_embeds=embedded.embeds, output_attentions=True)

    def predict_records(self, records: Sequence[dict]) -> np.ndarray:
        """Each record read by its source's net (``source_field``; a source it was not trained on by the mean
        of all nets, as ``predict_proba`` reads every text)."""
        field = self.config.source_field
        if not field:
            return super().predict_records(records)
        texts, sources = check_texts([r["text"] for r in records]), [r.get(field) for r in records]
        return self.probabilities_by_length(texts, lambda chosen: self.batch([texts[i] for i in chosen],
                                                                             [sources[i] for i in chosen]))

    # -- adversarial training (§4.5) --------------------------------------------------------------

    def training_loss(self, model: nn.Module, inputs: dict, labels: torch.Tensor) -> torch.Tensor:
        t, adversary = self.training, self.adversary
        embedded = self.embed_batch(model, inputs)
        loss = self.task_loss(model, embedded, inputs, labels)
        if not adversary.perturbs or t.lambda_adv == 0:
            return loss
        (grad,) = torch.autograd.grad(loss, embedded.embeds, retain_graph=True)
        grad = grad.detach() * embedded.mask.unsqueeze(-1).to(grad.dtype)  # padding is never moved
        direction = grad / _norm(grad).clamp_min(1e-12)
        step = adversary.scale(model, t) * direction
        adversarial = F.cross_entropy(self.model_logits(model, embedded.perturbed(step)), labels)
        return loss + t.lambda_adv * adversarial - adversary.penalty(model, t)

    def parameter_groups(self, model: nn.Module) -> list[dict]:
        return self.adversary.parameter_groups(super().parameter_groups(model), model, self.training)

    def after_step(self, model: nn.Module) -> None:
        self.adversary.after_step(model)

