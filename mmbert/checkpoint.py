"""Checkpoints that survive a kill, and the run's JSON log.

``OUT/checkpoint`` holds the full training state (model, optimizer, scheduler, random states, through
Accelerate) plus ``trainer_state.json``, written at the end of every epoch and every
``checkpoint_minutes`` within one; it is written to a temporary folder and swapped in, so a kill at
any moment leaves either the previous or the new checkpoint, never half of one. ``OUT/log.json`` lists
one entry per finished epoch.

The trainer's ``state`` dict says where the run is: ``epoch`` (finished epochs), ``step`` (batches done
of the next one) and whatever the caller keeps for the epoch in progress (loss sums, ...), under the
keys of ``EPOCH_KEYS`` or its own.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator

import torch

from cloak.common.io import usual_permissions, write_atomic

from .folder import CHECKPOINT, TRAINER_STATE
from .loading import quiet_loading


class Objective(torch.nn.Module):
    """A model and its training loss as one module, the one Accelerate prepares.

    DistributedDataParallel needs exactly one forward per backward, and a loss may run the model
    several times (once per modality, say): wrapped together, it is one forward whatever the loss does.
    ``loss(model, *args)`` returns the loss, or a tuple whose first item is the loss.
    """

    def __init__(self, model: torch.nn.Module, loss: Callable) -> None:
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, *args, **kwargs):
        return self.loss(self.model, *args, **kwargs)


EPOCH_KEYS = ("totals", "epoch_lr", "epoch_seconds")  # state of the epoch in progress, dropped at its end


def start_run(out_dir: str, seed: int, resume: bool, checkpoint_minutes: float = 10,
              on_checkpoint: Callable[[dict], None] | None = None):
    """(accelerator, checkpointer) of a training run into ``out_dir``, seeded; checks that ``resume``
    has a checkpoint to resume from. ``on_checkpoint(state)`` is called after each checkpoint."""
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs, set_seed

    # Stages 1 and 2 run the model on one modality at a time: the others' parameters get no gradient.
    accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    set_seed(seed)
    os.makedirs(out_dir, exist_ok=True)
    checkpointer = Checkpointer(out_dir, accelerator, 60 * checkpoint_minutes, on_checkpoint)
    if resume and not checkpointer.exists():
        raise ValueError(f"--resume: {out_dir} has no checkpoint to resume from")
    return accelerator, checkpointer


class Checkpointer:
    def __init__(self, out_dir: str, accelerator, every_seconds: float = 600,
                 on_checkpoint: Callable[[dict], None] | None = None) -> None:
        self.out_dir, self.accelerator = out_dir, accelerator
        self.every_seconds, self.on_checkpoint = every_seconds, on_checkpoint
        self.path = os.path.join(out_dir, CHECKPOINT)
        self.old_path = self.path + ".old"  # the previous checkpoint while save() swaps the new one in
        self.log_path = os.path.join(out_dir, "log.json")
        self._finish_swap()

    def _finish_swap(self) -> None:
        """A kill inside ``save``'s swap leaves the previous checkpoint as ``checkpoint.old``, beside the
        new one (then dropped) or alone (then restored); left there, it would block every later save."""
        if self.accelerator.is_main_process and os.path.isdir(self.old_path):
            if self.exists():
                shutil.rmtree(self.old_path)
            else:
                shutil.rmtree(self.path, ignore_errors=True)
                os.replace(self.old_path, self.path)
        self.accelerator.wait_for_everyone()

    def exists(self) -> bool:
        return os.path.isfile(os.path.join(self.path, TRAINER_STATE))

    def save(self, state: dict) -> None:
        """Save the accelerator's registered objects and ``state`` (epoch, best score, ...)."""
        tmp = self.path + ".tmp"
        if self.accelerator.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
        self.accelerator.wait_for_everyone()
        self.accelerator.save_state(tmp)
        if self.accelerator.is_main_process:
            write_atomic(os.path.join(tmp, TRAINER_STATE), json.dumps(state, indent=1).encode())
            if os.path.exists(self.path):
                os.replace(self.path, self.old_path)
            os.replace(tmp, self.path)
            shutil.rmtree(self.old_path, ignore_errors=True)
        self.accelerator.wait_for_everyone()
        if self.on_checkpoint is not None:
            self.on_checkpoint(dict(state))

    def batches(self, loader, state: dict) -> Iterator:
        """The batches of the epoch in progress from batch ``state["step"] + 1`` on (a resumed run
        skips what was done), saving ``state`` every ``every_seconds`` after a batch. The caller keeps
        ``state`` current (its loss sums, say) while it handles each batch."""
        done = state.get("step", 0)
        started, last = time.time() - state.get("epoch_seconds", 0.0), time.time()
        for step, batch in enumerate(self.accelerator.skip_first_batches(loader, done), start=done + 1):
            yield batch
            if step < len(loader) and time.time() - last >= self.every_seconds:
                state.update(step=step, epoch_seconds=time.time() - started)
                self.save(state)
                last = time.time()

    def end_epoch(self, state: dict, epoch: int) -> None:
        """Checkpoint a finished epoch (the epoch in progress's keys dropped)."""
        for key in EPOCH_KEYS:
            state.pop(key, None)
        state.update(epoch=epoch, step=0)
        self.save(state)

    def load(self) -> dict:
        """Restore the registered objects; returns the saved state."""
        self.accelerator.load_state(self.path)
        with open(os.path.join(self.path, TRAINER_STATE), encoding="utf-8") as f:
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
    with quiet_loading(report=True):
        accelerator.unwrap_model(model).save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    usual_permissions(os.path.join(tmp, name) for name in os.listdir(tmp))
    for name in os.listdir(tmp):
        os.replace(os.path.join(tmp, name), os.path.join(out_dir, name))
    os.rmdir(tmp)
