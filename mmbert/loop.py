"""The one epoch loop every torch model here trains with: MMBERT's stages, the masked-LM backbone, and
the detectors of ``attacks`` (BERT, ChineseBERT-style, ...).

Under Hugging Face Accelerate (one process, or several with ``accelerate launch`` / ``torchrun``):
AdamW over the caller's parameter groups, linear decay with optional warm-up, a seeded data order per
epoch, a dev evaluation after every epoch, the best epoch saved by the caller's ``save``, early
stopping after ``patience`` epochs without improvement, ``log.json``, and checkpoints at the end of
every epoch and every ``checkpoint_minutes`` within one (``mmbert.checkpoint``), from which
``resume=True`` continues with the same data order and random state, as if never stopped. Given the
examples' lengths, each batch draws examples of similar length (:class:`LengthGroupedBatches`).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import torch
from cloak.common.progress import progress_bar

from .checkpoint import Objective, start_run
from .loop_settings import LoopSettings  # declared where torch is not needed; imported from here too

Loss = Callable[..., "torch.Tensor | tuple[torch.Tensor, torch.Tensor | None]"]
GROUP_BATCHES = 50  # batches per length-sorted group, as Hugging Face's group_by_length


class LengthGroupedBatches(torch.utils.data.Sampler):
    """Batches of indices into examples of the given ``lengths``, each of similar lengths: a seeded
    shuffle, sorted by length within groups of ``GROUP_BATCHES`` batches, cut into batches (only the
    last one short), and the batches shuffled. Padding to a batch's longest example is most of the
    compute when short posts share a batch with long ones (3.4x on COLD for HABERTOR's pre-training).
    Each iteration starts from ``seed`` again, so a resumed epoch sees the same batches."""

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int) -> None:
        self.lengths, self.batch_size, self.seed = list(lengths), batch_size, seed

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        group = GROUP_BATCHES * self.batch_size
        order = [i for start in range(0, len(order), group)
                 for i in sorted(order[start:start + group], key=self.lengths.__getitem__, reverse=True)]
        batches = [order[start:start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        yield from (batches[i] for i in torch.randperm(len(batches), generator=generator).tolist())


def adamw(groups: list[dict]) -> torch.optim.AdamW:
    """AdamW, fused into one kernel where the torch build has it (CPU since torch 2.4): the same update,
    and for multilingual-e5's 250k x 384 embedding table a step of 0.4 s instead of 2.7 s on 2 cores,
    most of a batch's time otherwise."""
    try:
        return torch.optim.AdamW(groups, fused=True)
    except (RuntimeError, TypeError):  # an older torch, or a device without the fused kernel
        return torch.optim.AdamW(groups)


def train_epochs(model: torch.nn.Module, loss: Loss, train: Sequence, collate: Callable, groups: list[dict],
                 evaluate: Callable[[torch.nn.Module], dict], save: Callable[[torch.nn.Module, object], None],
                 out_dir: str, settings: LoopSettings, *, resume: bool = False, progress: bool | None = None,
                 on_checkpoint: Callable[[dict], None] | None = None, desc: str = "train",
                 after_step: Callable[[torch.nn.Module], None] | None = None,
                 lengths: Sequence[int] | None = None) -> dict:
    """Train ``model`` on ``train`` (examples ``collate`` makes batches of); returns the log of every
    epoch and the best one.

    loss: ``loss(model, batch, epoch)`` -> the loss, or (loss, auxiliary loss or None) whose mean over
        the epoch is logged as ``train_aux_loss``.
    groups: AdamW parameter groups (``params``, ``lr``, ``weight_decay``, ``name``).
    evaluate: the dev figures of the model after an epoch, with the ``score`` early stopping maximises.
    save: ``save(model, accelerator)`` writes the model when an epoch beats the best so far.
    on_checkpoint: called with the trainer's state after each checkpoint (tests interrupt with it).
    after_step: called with the model after every optimiser step (to project a constrained parameter).
    lengths: each training example's length (in the units its batch is padded in); when given, batches
        draw examples of similar length.
    """
    from transformers import get_linear_schedule_with_warmup

    accelerator, checkpointer = start_run(out_dir, settings.seed, resume, settings.checkpoint_minutes, on_checkpoint)
    optimizer = adamw(groups)
    steps = settings.epochs * math.ceil(len(train) / (settings.batch_size * accelerator.num_processes))
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * steps), steps)
    objective, optimizer, scheduler = accelerator.prepare(Objective(model, loss), optimizer, scheduler)

    state = {"epoch": 0, "step": 0, "best_score": None, "best_epoch": None, "since_best": 0}
    log: list[dict] = []
    if resume:
        state = {**state, **checkpointer.load()}
        log = checkpointer.read_log()[: state["epoch"]]
    for epoch in range(state["epoch"], settings.epochs):
        if state["since_best"] >= settings.patience:
            break
        objective.train()
        epoch_seed = settings.seed * 1_000_003 + epoch  # the same order on resume
        # a loader's own generator also keeps it from drawing on the global RNG, which dropout replays
        batching = {"batch_size": settings.batch_size, "shuffle": True} if lengths is None else {
            "batch_sampler": LengthGroupedBatches(lengths, settings.batch_size, epoch_seed)}
        loader = accelerator.prepare(torch.utils.data.DataLoader(
            train, collate_fn=collate, generator=torch.Generator().manual_seed(epoch_seed), **batching))
        if not state["step"]:  # a new epoch (not one resumed halfway)
            state.update(totals={"loss": 0.0, "aux_loss": 0.0, "aux_batches": 0},
                         epoch_lr={g["name"]: g["lr"] for g in optimizer.param_groups})
        totals, started = state["totals"], time.time() - state.get("epoch_seconds", 0.0)
        bar = progress_bar(checkpointer.batches(loader, state), initial=state["step"], total=len(loader),
                           desc=f"{desc} epoch {epoch + 1}/{settings.epochs}", unit="batch",
                           progress=False if not accelerator.is_local_main_process else progress)
        for batch in bar:
            value = objective(batch, epoch)
            value, aux = value if isinstance(value, tuple) else (value, None)
            if aux is not None:
                totals["aux_loss"] += aux.item()
                totals["aux_batches"] += 1
            accelerator.backward(value)
            optimizer.step()
            if after_step is not None:
                after_step(model)
            scheduler.step()
            optimizer.zero_grad()
            totals["loss"] += value.item()
            bar.set_postfix(loss=f"{value.item():.4f}")
        entry = {"epoch": epoch + 1, "train_loss": totals["loss"] / len(loader)}
        if totals["aux_batches"]:
            entry["train_aux_loss"] = totals["aux_loss"] / totals["aux_batches"]
        model.eval()
        entry.update(evaluate(model))
        entry["seconds"] = round(time.time() - started, 2)
        entry["lr"] = state["epoch_lr"]
        if state["best_score"] is None or entry["score"] > state["best_score"]:
            state.update(best_score=entry["score"], best_epoch=epoch + 1, since_best=0)
            save(model, accelerator)
        else:
            state["since_best"] += 1
        log.append(entry)
        checkpointer.write_log(log)
        checkpointer.end_epoch(state, epoch + 1)
    checkpointer.remove()
    return {"log": log, "best_score": state["best_score"], "best_epoch": state["best_epoch"],
            "epochs_run": state["epoch"], "processes": accelerator.num_processes,
            "main_process": accelerator.is_main_process}
