"""What a folder holds, read from its config.json alone (no torch, no transformers: instant)."""
from __future__ import annotations

import json
import os

NOT_MMBERT = "not an MMBERT model folder (no config.json with model_type 'mmbert')"


def mmbert_config(path: str | None) -> dict | None:
    """The config.json of an MMBERT folder, or None for anything else."""
    config = os.path.join(path or "", "config.json")
    if not os.path.isfile(config):
        return None
    with open(config, encoding="utf-8") as f:
        try:
            fields = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{config}: not valid JSON ({e})") from None
    return fields if isinstance(fields, dict) and fields.get("model_type") == "mmbert" else None


def label_count(path: str) -> int | None:
    """How many labels the model of an MMBERT folder knows (its config.json), or None for anything else."""
    fields = mmbert_config(path)
    if fields is None:
        return None
    return len(fields["id2label"]) if fields.get("id2label") else int(fields.get("num_labels", 2))


def is_mmbert(path: str | None) -> bool:
    return mmbert_config(path) is not None


def peek_features(model_dir: str) -> dict:
    """The ``features`` section saved in a trained MMBERT folder's config."""
    fields = mmbert_config(model_dir)
    if fields is None:
        raise ValueError(f"{model_dir} is {NOT_MMBERT}")
    return fields.get("features") or {}
