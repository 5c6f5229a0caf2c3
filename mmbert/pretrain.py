"""Masked-language-model pre-training of a from-scratch BERT backbone (HABERTOR's setting), for
machines without a pretrained Chinese BERT. The result is a BERT folder (``BertForMaskedLM`` and its
tokenizer) that ``mmbert train --stage 1 --from DIR`` upcycles into MMBERT.

2% of the corpus is held out; the epoch with the lowest held-out masked-LM loss is the one saved, and
training stops after ``train.pretrain.patience`` epochs without improvement."""
from __future__ import annotations

import math
import time

import torch
from tqdm import tqdm

from cloak.io import read_lines, read_records

from .checkpoint import Objective, save_model, start_run
from .presets import MM_FIELDS, check_run_config
from .tokenization import build_tokenizer


def masked_lm_loss(model, batch: dict) -> torch.Tensor:
    """BertForMaskedLM's loss, with the vocabulary projection run on the masked positions only: it is
    most of the compute of a small BERT over a 23k vocabulary, and 85% of it would be thrown away."""
    labels = batch["labels"]
    hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    masked = labels != -100
    logits = model.cls(hidden[masked])
    return torch.nn.functional.cross_entropy(logits, labels[masked])


def read_corpus(path: str, text_field: str = "text") -> list[str]:
    """Texts of a JSONL file of records, or the non-empty lines of a plain text file."""
    if path.endswith((".jsonl", ".json")):
        return [r[text_field] for _, r in read_records(path, text_field=text_field)]
    texts = []
    for number, raw in read_lines(path):
        try:
            texts.append(raw.decode("utf-8").strip())
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}, line {number}: not valid UTF-8 ({e.reason})") from None
    return [t for t in texts if t]


def pretrain(corpus: str, out_dir: str, run: dict, resume: bool = False, progress: bool | None = None,
             text_field: str = "text") -> dict:
    """Pre-train for ``run["train"]["pretrain"]`` (epochs, lr, mlm_probability); 2% of the corpus is
    held out for the masked-LM loss in the log. Returns the last log entry."""
    from transformers import BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling, \
        get_linear_schedule_with_warmup

    run = check_run_config(run)
    settings = run["train"]
    options = settings["pretrain"]
    epochs, lr = options["epochs"], options["lr"]
    batch_size, max_length, seed = settings["batch_size"], settings["max_length"], settings["seed"]
    texts = read_corpus(corpus, text_field)  # the data first: a bad file fails before anything is made
    if len(texts) < 10:
        raise ValueError(f"{corpus}: {len(texts)} texts; pre-training needs a corpus of at least 10")
    accelerator, checkpointer = start_run(out_dir, seed, resume, settings["checkpoint_minutes"])

    tokenizer = build_tokenizer()
    tokenizer.model_max_length = max_length
    encoded = [{"input_ids": ids} for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]
    held_out = max(1, len(encoded) // 50)
    train, dev = encoded[held_out:], encoded[:held_out]
    shape = {k: v for k, v in run["model"].items() if k not in MM_FIELDS and k != "backbone"}
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), **shape))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=options["mlm_probability"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=settings["weight_decay"])
    steps = epochs * math.ceil(len(train) / (batch_size * accelerator.num_processes))
    scheduler = get_linear_schedule_with_warmup(optimizer, int(0.06 * steps), steps)
    objective, optimizer, scheduler = accelerator.prepare(Objective(model, masked_lm_loss), optimizer, scheduler)
    state, log = {"epoch": 0, "step": 0, "best_loss": None, "since_best": 0}, []
    if resume:
        state, log = {"step": 0, **checkpointer.load()}, checkpointer.read_log()
    for epoch in range(state["epoch"], epochs):
        if state["since_best"] >= options["patience"]:
            break
        if not state["step"]:  # a new epoch (not one resumed halfway)
            state["totals"] = {"loss": 0.0}
        totals, started = state["totals"], time.time() - state.get("epoch_seconds", 0.0)
        objective.train()
        generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
        loader = accelerator.prepare(torch.utils.data.DataLoader(train, batch_size=batch_size, shuffle=True,
                                                                 generator=generator, collate_fn=collator))
        bar = tqdm(checkpointer.batches(loader, state), initial=state["step"], total=len(loader),
                   desc=f"pretrain epoch {epoch + 1}/{epochs}", unit="batch", leave=False,
                   disable=progress is False or None or not accelerator.is_local_main_process)
        for batch in bar:
            loss = objective(batch)
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            totals["loss"] += loss.item()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        model.eval()
        torch.manual_seed(seed)  # the same masks on the held-out texts every epoch
        with torch.no_grad():
            dev_losses = [masked_lm_loss(model, {k: v.to(accelerator.device) for k, v in
                                                 collator(dev[i:i + batch_size]).items()}).item()
                          for i in range(0, len(dev), batch_size)]
        entry = {"epoch": epoch + 1, "train_mlm_loss": totals["loss"] / len(loader),
                 "dev_mlm_loss": sum(dev_losses) / len(dev_losses), "seconds": round(time.time() - started, 2)}
        log.append(entry)
        if state["best_loss"] is None or entry["dev_mlm_loss"] < state["best_loss"]:
            state.update(best_loss=entry["dev_mlm_loss"], best_epoch=epoch + 1, since_best=0)
            save_model(out_dir, model, tokenizer, accelerator)
        else:
            state["since_best"] += 1
        checkpointer.write_log(log)
        checkpointer.end_epoch(state, epoch + 1)
    checkpointer.remove()
    return {**(log[-1] if log else {}), "best_epoch": state.get("best_epoch"), "best_mlm_loss": state["best_loss"]}
