"""``mmbert``: a trained MMBERT as a victim (text + speech + glyphs; ``mmbert`` package).

``fit`` runs the three stages (``mmbert.train.train_stage``: aligners, experts, the whole) with a run
configuration (a preset, a YAML file or a mapping: ``mmbert.presets``), stage 1 starting from
``backbone``; the stage-3 model is the victim. ``attacks.load_victim`` also takes any folder
``mmbert train --stage 3`` wrote.

``predict_proba`` reads raw texts: speech comes from the model's speech cache or is synthesised on the
spot (its saved ``features`` settings). In ``embed``/``logits`` the text tokens' word embeddings are
what an attack perturbs; the glyph tokens (looked up by token id) and the speech (made from the text)
stay as the text gives them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence

import torch

from cloak.common.io import write_records
from cloak.common.params import InstanceOf, Interval

from .base import Fitted, NoSettings, Settings, register_victim
from .neural import Embedded, TorchVictim, save_tokenizer

STAGES = (1, 2, 3)
# Files of an `mmbert train` folder that are records of its training, not the model.
TRAINING_LOGS = ("log.json", "training.json")


@dataclasses.dataclass
class MMBertVictimConfig(Settings):
    """run: the run configuration of the three stages (preset name, YAML path or mapping); backbone:
    the BERT stage 1 upcycles (a hub name or a folder, e.g. from ``mmbert pretrain`` or
    multilingual-e5-small), or None for the run configuration's own; backbone_layers: keep its first N
    layers (None: the run configuration's ``model.backbone_layers``, else all)."""

    run: object = "small"
    backbone: str | None = None
    backbone_layers: int | None = None
    _parameter_constraints = {"run": [InstanceOf(str), InstanceOf(dict)], "backbone": [InstanceOf(str), None],
                              "backbone_layers": [Interval(int, 1), None]}


@register_victim
class MMBertVictim(TorchVictim):
    """MMBERT behind the victim contract (see the module docstring)."""

    kind = "mmbert"
    summary = "MMBERT: text + speech + glyph mixture of experts, three stages"
    Config = MMBertVictimConfig
    Training = NoSettings  # the stages' settings are in the run configuration
    featurizer_ = Fitted()  # what turns texts into the model's inputs: loaded with the model

    @classmethod
    def read_folder(cls, directory: str) -> dict | None:
        """A folder ``mmbert train`` wrote (no victim.json) is a victim too: its labels from its config.json;
        its fingerprint from its config, tokenizer and weights."""
        from cloak.common.io import file_sha256
        from mmbert.folder import label_count

        labels = label_count(directory)
        if labels is None:
            return None
        digest = hashlib.sha256()
        for name in sorted(os.listdir(directory)):
            file = os.path.join(directory, name)
            if os.path.isfile(file) and name not in TRAINING_LOGS:
                digest.update(f"{name}\0{file_sha256(file)}\n".encode())
        return {"kind": cls.kind, "name": cls.kind, "num_labels": labels, "config": {}, "training": {},
                "settings": "trained by mmbert train", "fingerprint": digest.hexdigest()}

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None, on_checkpoint=None) -> MMBertVictim:
        from mmbert.presets import load_run_config
        from mmbert.train import train_stage

        if out_dir is None:
            raise ValueError("mmbert trains in stages into a folder: give out_dir")
        if dev is None:
            raise ValueError("mmbert picks each stage's best epoch on dev records: give dev")
        run = load_run_config(self.config.run)
        if self.config.backbone_layers is not None:
            run["model"]["backbone_layers"] = self.config.backbone_layers
        work = os.path.join(out_dir, "stages")
        os.makedirs(work, exist_ok=True)
        data = {name: os.path.join(work, f"{name}.jsonl") for name in ("train", "dev")}
        if not resume or not all(os.path.exists(p) for p in data.values()):
            write_records(data["train"], train)
            write_records(data["dev"], dev)
        previous = self.config.backbone
        for stage in STAGES:
            stage_dir = os.path.join(work, f"s{stage}")
            done = os.path.isfile(os.path.join(stage_dir, "training.json"))
            if not done:
                in_progress = os.path.isdir(os.path.join(stage_dir, "checkpoint"))
                train_stage(stage, run, data["train"], data["dev"], stage_dir, previous,
                            resume=resume and in_progress, progress=progress, on_checkpoint=on_checkpoint)
            previous = stage_dir
        self._load_weights(previous)
        self.num_labels_ = self.model_.config.num_labels
        return self

    def _save_weights(self, directory: str) -> list[str]:
        self.model_.save_pretrained(directory)
        return sorted({"config.json", "model.safetensors", *save_tokenizer(self.featurizer_.tokenizer, directory)})

    def _load_weights(self, directory: str) -> None:
        from mmbert.loading import load_model

        self.model_, self.featurizer_ = load_model(directory)

    def batch(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        examples = self.featurizer_.encode([{"text": t} for t in texts], progress=False)
        return self.featurizer_.collate(examples)

    @property
    def has_token_spans(self) -> bool:
        return self.featurizer_.tokenizer.is_fast  # a slow tokenizer gives no character offsets

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int] | None]]:
        return self.featurizer_.token_spans(list(texts))

    def embed_batch(self, model, batch: dict) -> Embedded:
        embeds = model.mmbert.embeddings.word_embeddings(batch["input_ids"])
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "speech_features", "speech_mask")}
        return Embedded(embeds, batch["attention_mask"], inputs)

    def model_logits(self, model, embedded: Embedded) -> torch.Tensor:
        inputs = embedded.inputs
        return model(inputs["input_ids"], embedded.mask, inputs.get("speech_features"), inputs.get("speech_mask"),
                     inputs_embeds=embedded.embeds).logits

