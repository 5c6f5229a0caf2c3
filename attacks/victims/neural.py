"""What the torch detectors share. ``TorchVictim``: batched prediction through the input embeddings,
which FGM, PGD and the search's gradients move. ``FineTunedVictim``: fine-tuning through MMBERT's epoch
loop and safetensors weights, for the detectors trained here (MMBERT trains in its own three stages).

A subclass turns texts into padded batches (``batch``; ``token_spans``: the characters each position
covers, where ``has_token_spans``) and says how a batch becomes input embeddings (``embed_batch``) and
embeddings become logits (``model_logits``); a fine-tuned one also builds its model (``build``, from a
backbone, for training; ``architecture``, empty, for loading) and gives its attention weights
(``model_attentions``). ``predict_proba`` goes through ``embed`` and ``logits`` too, so what an attack
perturbs is exactly what the prediction reads.
"""
from __future__ import annotations

import abc
import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from cloak.common.params import InstanceOf, Interval, Options
from mmbert.loop_settings import LoopSettings

from ..nn.regularizers import REGULARIZERS, Regularizer
from .base import Fitted, Settings, Victim, check_texts, labels_of, texts_of

WEIGHTS = "model.safetensors"
ARCHITECTURE = "architecture.json"


@dataclasses.dataclass
class NeuralTraining(Settings, LoopSettings):
    """Wankmüller (2021)'s fine-tuning recipe by default: AdamW, linear decay, no warm-up, no weight decay, lr
    2e-5, 3 epochs, batches of 16; the best epoch by dev macro-F1 (``dev_share`` of the training
    records are held out when no dev set is given). The epoch loop's fields (epochs, batch size, patience,
    seed, checkpoints, warm-up) are ``mmbert.loop_settings.LoopSettings``'s. ``regularizer``: ``ear`` or
    ``klar`` adds an attention regulariser (``attacks.nn.regularizers``) weighted by ``regularizer_alpha``
    (None: 0.01 for EAR, 0.1 for KLAR); KLAR gives ``klar_share`` of the attention to the tokens of the
    ``relevant`` lexicon's terms (None: the default lexicon)."""

    epochs: int = 3
    batch_size: int = 16
    patience: int = 2
    lr: float = 2e-5
    weight_decay: float = 0.0
    dev_share: float = 0.1
    regularizer: str = "none"
    regularizer_alpha: float | None = None
    klar_share: float = 0.4
    relevant: str | None = None
    _parameter_constraints = {**LoopSettings._parameter_constraints, "lr": Interval(float, 0, closed="neither"),
                              "weight_decay": Interval(float, 0), "dev_share": Interval(float, 0, 1, closed="neither"),
                              "regularizer": Options(*REGULARIZERS),
                              "regularizer_alpha": [Interval(float, 0), None], "klar_share": Interval(float, 0, 1),
                              "relevant": [InstanceOf(str), None]}


@dataclasses.dataclass
class Embedded:
    """A batch as the model reads it: ``embeds`` (b, n, hidden), the input embeddings an attack may
    perturb, one example each; ``mask`` (b, n); ``inputs``: what else the model reads (token ids for
    glyphs, speech), which stays as the text gives it."""

    embeds: torch.Tensor
    mask: torch.Tensor
    inputs: dict

    def perturbed(self, delta: torch.Tensor) -> Embedded:
        return dataclasses.replace(self, embeds=self.embeds + delta)


class TorchVictim(Victim):
    """Base of the torch detectors: a model read through its input embeddings, so that FGM, PGD and the
    gradient importance of the search reach it; predictions batched by length. A subclass gives
    ``batch``, ``embed_batch`` and ``model_logits``; one trained here derives from ``FineTunedVictim``."""

    differentiable = True
    packages = ("torch", "transformers", "safetensors")
    predict_batch_size = 64
    model_ = Fitted()  # the torch model: built by fit, or read by load

    # -- what a subclass provides ---------------------------------------------------------------

    @abc.abstractmethod
    def batch(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Padded tensors for a list of texts (``input_ids``, ``attention_mask``, ...)."""

    @property
    @abc.abstractmethod
    def has_token_spans(self) -> bool:
        """Whether ``token_spans`` can say which characters each input position covers (a fast tokenizer
        gives offsets, a slow one does not)."""

    @abc.abstractmethod
    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int] | None]]:
        """Each text's input positions as ``batch`` gives them: the characters each covers, None for
        special tokens (a ValueError where ``has_token_spans`` is False)."""

    @abc.abstractmethod
    def embed_batch(self, model: torch.nn.Module, batch: dict) -> Embedded:
        """A batch's input embeddings (what FGM and PGD move), its mask and the other inputs."""

    @abc.abstractmethod
    def model_logits(self, model: torch.nn.Module, embedded: Embedded) -> torch.Tensor:
        """The model's logits on (possibly moved) input embeddings."""

    # -- the contract -------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> Embedded:
        """Each text's input embeddings (on the model's device, with gradients possible)."""
        device = next(self.model_.parameters()).device
        batch = {k: v.to(device) for k, v in self.batch(check_texts(texts)).items()}
        return self.embed_batch(self.model_, batch)

    def logits(self, embedded: Embedded) -> torch.Tensor:
        return self.model_logits(self.model_, embedded)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        return self.probabilities_by_length(texts, lambda chosen: self.batch([texts[i] for i in chosen]))

    def probabilities_by_length(self, texts: Sequence[str], make_batch: Callable[[list[int]], dict]) -> np.ndarray:
        """Probabilities in the order of ``texts``, computed over batches of texts of similar length
        (``make_batch`` builds the batch of the texts at the given indices): a batch pads to its longest
        text, and a search asks about posts of every length at once."""
        order = np.argsort([len(t) for t in texts], kind="stable")
        size = self.predict_batch_size
        probs = self.batch_probabilities(make_batch(order[at:at + size].tolist()) for at in range(0, len(texts), size))
        out = np.empty_like(probs)
        out[order] = probs
        return out

    @torch.no_grad()
    def batch_probabilities(self, batches: Iterable[dict]) -> np.ndarray:
        """Class probabilities (n, n_classes) of the posts of ``batch`` outputs, in order."""
        self.model_.eval()
        device = next(self.model_.parameters()).device
        out = [torch.softmax(self.logits(self.embed_batch(self.model_, {k: v.to(device) for k, v in b.items()}))
                             .float(), -1).cpu() for b in batches]
        return torch.cat(out).numpy().astype(np.float64) if out else np.zeros((0, self.num_labels_))

    def saliency(self, texts: Sequence[str], labels: Sequence[int]) -> list[np.ndarray]:
        """How much each character of each text drives the loss of its label (TextAttack's gradient word
        importance): per input token, the L1 norm of the loss's gradient with respect to the token's
        embedding, shared out evenly over the characters the token covers. Characters the model does
        not read (the middle of a long post) get 0. One forward and backward pass a text."""
        texts, labels = check_texts(texts), np.asarray(labels, dtype=int)
        self.model_.eval()
        out = []
        for at in range(0, len(texts), self.predict_batch_size):
            chunk = texts[at:at + self.predict_batch_size]
            with torch.no_grad():
                embedded = self.embed(chunk)
            embeds = embedded.embeds.detach().requires_grad_(True)
            gold = torch.as_tensor(labels[at:at + len(chunk)], device=embeds.device)
            loss = F.cross_entropy(self.logits(dataclasses.replace(embedded, embeds=embeds)), gold, reduction="sum")
            (grad,) = torch.autograd.grad(loss, embeds)
            per_token = (grad.abs().sum(-1) * embedded.mask).float().cpu().numpy()
            for text, spans, scores in zip(chunk, self.token_spans(chunk), per_token):
                chars = np.zeros(len(text))
                for span, score in zip(spans, scores):
                    if span is not None and span[1] > span[0]:
                        chars[span[0]:span[1]] += score / (span[1] - span[0])
                out.append(chars)
        return out


class FineTunedVictim(TorchVictim):
    """A torch detector fine-tuned here by ``mmbert.loop`` (see the module docstring): a subclass builds its
    model from a backbone (``build``), rebuilds a saved one's shape (``architecture``) and writes what that
    needs (``save_architecture``); the loop, checkpoints, regularisers and weights are shared."""

    Training = NeuralTraining
    attentions = True  # model_attentions: the attention regularisers reach every one
    log_ = Fitted()  # each epoch's figures and the best, as fit ran them
    tokenizer_ = Fitted()  # the model's tokenizer: set by build, or by architecture when loading

    def __init__(self, config: Settings | dict | None = None, training: Settings | dict | None = None) -> None:
        super().__init__(config, training)
        self._relevant = None  # KLAR's relevant terms (a cloak Lexicon), read at the first batch

    # -- what a subclass provides ---------------------------------------------------------------

    @abc.abstractmethod
    def build(self, num_labels: int) -> torch.nn.Module:
        """The model to train, from its backbone; sets ``self.tokenizer_``."""

    @abc.abstractmethod
    def architecture(self, directory: str) -> torch.nn.Module:
        """The saved model's shape, empty (weights are loaded into it); sets ``self.tokenizer_``."""

    @abc.abstractmethod
    def save_architecture(self, directory: str) -> list[str]:
        """Write what ``architecture`` needs besides the weights; returns the files written."""

    @abc.abstractmethod
    def model_attentions(self, model: torch.nn.Module, embedded: Embedded) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The logits and every layer's attention weights (b, heads, n, n), for the attention regularisers."""

    @property
    def regularizer(self) -> Regularizer:
        """The attention regulariser the training names (``none``: the task loss alone)."""
        return REGULARIZERS[self.training.regularizer]

    # -- training -----------------------------------------------------------------------------------

    def training_batch(self, records: Sequence[dict]) -> dict[str, torch.Tensor]:
        """The model's inputs for training records (``batch`` of their texts, and for KLAR which tokens
        are relevant; a victim that reads more of a record, such as its source, adds it)."""
        texts = [r["text"] for r in records]
        out = self.batch(texts)
        if self.regularizer.needs_relevant:
            from ..nn.regularizers import load_relevant, relevant_positions

            if self._relevant is None:
                self._relevant = load_relevant(self.training.relevant)
            out["relevant"] = relevant_positions(texts, self.token_spans(texts), self._relevant,
                                                 out["input_ids"].shape[1])
        return out

    def training_loss(self, model: torch.nn.Module, inputs: dict, labels: torch.Tensor) -> torch.Tensor:
        """The task loss of a batch (adversarial training adds its term)."""
        return self.task_loss(model, self.embed_batch(model, inputs), inputs, labels)

    def task_loss(self, model: torch.nn.Module, embedded: Embedded, inputs: dict, labels: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of the gold labels, plus the attention regulariser's term if there is one."""
        t, regularizer = self.training, self.regularizer
        if not regularizer.reads_attentions:
            return F.cross_entropy(self.model_logits(model, embedded), labels)
        logits, attentions = self.model_attentions(model, embedded)
        return F.cross_entropy(logits, labels) + regularizer.term(
            attentions, embedded.mask, inputs.get("relevant"), alpha=t.regularizer_alpha, lam=t.klar_share)

    def parameter_groups(self, model: torch.nn.Module) -> list[dict]:
        """AdamW's parameter groups: every trainable parameter at the training's lr and weight decay."""
        t = self.training
        return [{"params": [p for p in model.parameters() if p.requires_grad], "lr": t.lr,
                 "weight_decay": t.weight_decay, "name": self.kind}]

    def after_step(self, model: torch.nn.Module) -> None:
        """Called after every optimiser step (a constrained parameter is projected back here)."""

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None, on_checkpoint=None) -> FineTunedVictim:
        """Fine-tune through ``mmbert.loop`` (checkpoints and ``resume`` in ``out_dir``); the best epoch
        by dev macro-F1 is saved to ``out_dir`` and kept."""
        from mmbert.loading import quiet_loading
        from mmbert.loop import train_epochs
        from mmbert.metrics import classification_metrics

        t = self.training
        if self.regularizer.reads_attentions and not self.attentions:
            raise ValueError(f"{self.name} gives no attention weights: no attention regularizer for it "
                             "(bert, chinesebert and habertor take one)")
        if dev is None:  # hold out a seeded share of the training records
            order = np.random.default_rng(t.seed).permutation(len(train))
            cut = max(1, int(round(t.dev_share * len(train))))
            dev, train = [train[i] for i in order[:cut]], [train[i] for i in order[cut:]]
        labels, dev_labels = labels_of(train, "the training records"), labels_of(dev, "the dev records")
        self.num_labels_ = int(max(labels.max(), dev_labels.max())) + 1
        torch.manual_seed(t.seed)  # a new head (and any new part) depends on the seed alone
        with quiet_loading():
            self.model_ = self.build(self.num_labels_)
        examples = [{**r, "label": int(y)} for r, y in zip(train, labels)]
        dev_texts = texts_of(dev)

        def collate(items: list[dict]) -> dict:
            return {**self.training_batch(items), "labels": torch.tensor([e["label"] for e in items])}

        def loss(model, batch: dict, epoch: int) -> torch.Tensor:
            return self.training_loss(model, {k: v for k, v in batch.items() if k != "labels"}, batch["labels"])

        def evaluate(model) -> dict:
            predictions = self.predict_proba(dev_texts).argmax(1)
            figures = classification_metrics(dev_labels, predictions)
            return {**{f"dev_{k}": v for k, v in figures.items()}, "score": figures["f1"]}

        work = out_dir or tempfile.mkdtemp(prefix="victim-")

        def save(model, accelerator) -> None:
            if accelerator.is_main_process:
                self.model_ = accelerator.unwrap_model(model)
                self.save(work)

        groups = self.parameter_groups(self.model_)
        self.log_ = train_epochs(self.model_, loss, examples, collate, groups, evaluate, save, work, t,
                                resume=resume, progress=progress, on_checkpoint=on_checkpoint, desc=self.name,
                                after_step=self.after_step)
        self._load_weights(work)  # the best epoch, not the last
        if out_dir is None:
            shutil.rmtree(work, ignore_errors=True)
        return self

    # -- weights ------------------------------------------------------------------------------------

    def _save_weights(self, directory: str) -> list[str]:
        from safetensors.torch import save_model

        files = self.save_architecture(directory)
        save_model(self.model_, os.path.join(directory, WEIGHTS))  # shared tensors stored once
        return [*files, WEIGHTS]

    def _load_weights(self, directory: str) -> None:
        from safetensors.torch import load_model

        model = self.architecture(directory)
        load_model(model, os.path.join(directory, WEIGHTS))
        self.model_ = model.eval()


def save_tokenizer(tokenizer, directory: str) -> list[str]:
    """Write a tokenizer's files into ``directory``; returns their names."""
    written = tokenizer.save_pretrained(directory)
    return sorted({os.path.basename(p) for p in written if os.path.isfile(p)})


def write_json(directory: str, name: str, value: dict) -> str:
    from cloak.common.io import write_atomic

    write_atomic(os.path.join(directory, name), (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode())
    return name


def read_json(directory: str, name: str) -> dict:
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return json.load(f)


def head_tail(ids: list[int], budget: int, head_share: float) -> list[int]:
    """A token sequence longer than ``budget`` keeps its first and last tokens (Wankmüller 2021: the first 128
    and the last 382 of BERT's 510), ``head_share`` of the budget at the head."""
    if len(ids) <= budget:
        return ids
    head = int(round(budget * head_share))
    return ids[:head] + ids[len(ids) - (budget - head):]
