"""Masked-language-model pre-training of a from-scratch BERT backbone (HABERTOR's setting), for
machines without a pretrained Chinese BERT. The result is a BERT folder (``BertForMaskedLM`` and its
tokenizer) that ``mmbert train --stage 1 --from DIR`` upcycles into MMBERT.

2% of the corpus is held out; the epoch with the lowest held-out masked-LM loss is the one saved, and
training stops after ``train.pretrain.patience`` epochs without improvement."""
from __future__ import annotations


import torch

from cloak.common.io import read_lines, read_records

from .checkpoint import save_model
from .loop import LoopSettings, train_epochs
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
    """Pre-train for ``run["train"]["pretrain"]`` (epochs, lr, mlm_probability, patience); 2% of the
    corpus is held out for the masked-LM loss that picks the best epoch. Returns the last log entry
    with the best epoch and its loss."""
    from transformers import BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling

    run = check_run_config(run)
    settings = run["train"]
    options = settings["pretrain"]
    batch_size, max_length, seed = settings["batch_size"], settings["max_length"], settings["seed"]
    texts = read_corpus(corpus, text_field)  # the data first: a bad file fails before anything is made
    if len(texts) < 10:
        raise ValueError(f"{corpus}: {len(texts)} texts; pre-training needs a corpus of at least 10")
    torch.manual_seed(seed)  # the new weights depend on the seed alone

    tokenizer = build_tokenizer()
    tokenizer.model_max_length = max_length
    encoded = [{"input_ids": ids} for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]
    held_out = max(1, len(encoded) // 50)
    train, dev = encoded[held_out:], encoded[:held_out]
    shape = {k: v for k, v in run["model"].items() if k not in MM_FIELDS and k != "backbone"}
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), **shape))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=options["mlm_probability"])

    def held_out_loss(model) -> dict:
        torch.manual_seed(seed)  # the same masks on the held-out texts every epoch
        device = next(model.parameters()).device
        with torch.no_grad():
            losses = [masked_lm_loss(model, {k: v.to(device) for k, v in collator(dev[i:i + batch_size]).items()}).item()
                      for i in range(0, len(dev), batch_size)]
        loss = sum(losses) / len(losses)
        return {"dev_mlm_loss": loss, "score": -loss}

    groups = [{"params": list(model.parameters()), "lr": options["lr"], "weight_decay": settings["weight_decay"],
               "name": "bert"}]
    loop = LoopSettings.of({**settings, **options}, warmup_ratio=0.06)
    result = train_epochs(model, lambda m, batch, epoch: masked_lm_loss(m, batch), train, collator, groups,
                          held_out_loss, lambda m, accelerator: save_model(out_dir, m, tokenizer, accelerator),
                          out_dir, loop, resume=resume, progress=progress, desc="pretrain",
                          lengths=[len(e["input_ids"]) for e in train])
    log = result["log"]
    best = -result["best_score"] if result["best_score"] is not None else None
    return {**(log[-1] if log else {}), "best_epoch": result["best_epoch"], "best_mlm_loss": best}
