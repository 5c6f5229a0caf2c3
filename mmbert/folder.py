"""What a folder holds, read from its config.json alone (no torch, no transformers: instant)."""
from __future__ import annotations

import json
import os

NOT_MMBERT = "not an MMBERT model folder (no config.json with model_type 'mmbert')"
# where a training run keeps its last state (``mmbert.checkpoint``), and the file that says where the run was
CHECKPOINT, TRAINER_STATE = "checkpoint", "trainer_state.json"


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


def what_training_kept(out_dir: str) -> str:
    """The end of ``PROG: interrupted`` for a training run into ``out_dir``: the checkpoint it left (in
    ``out_dir`` or a folder under it: a stage's, a defended detector's) and how to go on from it, or that it
    left none to go on from (none written yet, or a detector that keeps none)."""
    states = []
    for root, folders, _ in os.walk(out_dir):
        # a kill inside a checkpoint's swap leaves the previous one as checkpoint.old, which --resume restores
        for name in (CHECKPOINT, CHECKPOINT + ".old"):
            if os.path.isfile(os.path.join(root, name, TRAINER_STATE)):
                states.append(os.path.join(root, name, TRAINER_STATE))
        folders[:] = [f for f in folders if not f.startswith(CHECKPOINT)]
    if not states:
        return (f"; no checkpoint was kept in {out_dir}, nothing to resume from: rerun the same command to start "
                "over")
    newest = max(states, key=os.path.getmtime)
    with open(newest, encoding="utf-8") as f:
        state = json.load(f)
    epoch, step = state.get("epoch", 0), state.get("step", 0)
    where = f"epoch {epoch + 1}, after batch {step}" if step else f"after epoch {epoch}"
    return f"; the last checkpoint ({where}) is kept in {os.path.dirname(newest)}: rerun with --resume to continue"
