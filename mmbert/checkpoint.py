"""Epoch checkpoints that survive a kill, and the run's JSON log.

``OUT/checkpoint`` holds the last finished epoch's full training state (model, optimizer, scheduler,
random states, through Accelerate) plus ``trainer_state.json``; it is written to a temporary folder
and swapped in, so a kill at any moment leaves either the previous or the new checkpoint, never half
of one. ``OUT/log.json`` lists one entry per finished epoch.
"""
from __future__ import annotations

import json
import os
import shutil

from cloak.io import write_atomic


def start_run(out_dir: str, seed: int, resume: bool):
    """(accelerator, checkpointer) of a training run into ``out_dir``, seeded; checks that ``resume``
    has a checkpoint to resume from."""
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs, set_seed

    # Stages 1 and 2 run the model on one modality at a time: the others' parameters get no gradient.
    accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    set_seed(seed)
    os.makedirs(out_dir, exist_ok=True)
    checkpointer = Checkpointer(out_dir, accelerator)
    if resume and not checkpointer.exists():
        raise ValueError(f"--resume: {out_dir} has no checkpoint to resume from")
    return accelerator, checkpointer


class Checkpointer:
    def __init__(self, out_dir: str, accelerator) -> None:
        self.out_dir, self.accelerator = out_dir, accelerator
        self.path = os.path.join(out_dir, "checkpoint")
        self.log_path = os.path.join(out_dir, "log.json")

    def exists(self) -> bool:
        return os.path.isfile(os.path.join(self.path, "trainer_state.json"))

    def save(self, state: dict) -> None:
        """Save the accelerator's registered objects and ``state`` (epoch, best score, ...)."""
        tmp, old = self.path + ".tmp", self.path + ".old"
        if self.accelerator.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
        self.accelerator.wait_for_everyone()
        self.accelerator.save_state(tmp)
        if self.accelerator.is_main_process:
            write_atomic(os.path.join(tmp, "trainer_state.json"), json.dumps(state, indent=1).encode())
            if os.path.exists(self.path):
                os.replace(self.path, old)
            os.replace(tmp, self.path)
            shutil.rmtree(old, ignore_errors=True)
        self.accelerator.wait_for_everyone()

    def load(self) -> dict:
        """Restore the registered objects; returns the saved state."""
        self.accelerator.load_state(self.path)
        with open(os.path.join(self.path, "trainer_state.json"), encoding="utf-8") as f:
            return json.load(f)

    def remove(self) -> None:
        if self.accelerator.is_main_process:
            shutil.rmtree(self.path, ignore_errors=True)

    def read_log(self) -> list[dict]:
        if not os.path.exists(self.log_path):
            return []
        with open(self.log_path, encoding="utf-8") as f:
            return json.load(f)

    def write_log(self, entries: list[dict]) -> None:
        if self.accelerator.is_main_process:
            write_atomic(self.log_path, json.dumps(entries, indent=1, ensure_ascii=False).encode())


def save_model(out_dir: str, model, tokenizer, accelerator) -> None:
    """``save_pretrained`` the (unwrapped) model and tokenizer into ``out_dir``, each file swapped in."""
    if not accelerator.is_main_process:
        return
    tmp = os.path.join(out_dir, ".model.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    accelerator.unwrap_model(model).save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    for name in os.listdir(tmp):
        os.replace(os.path.join(tmp, name), os.path.join(out_dir, name))
    os.rmdir(tmp)
