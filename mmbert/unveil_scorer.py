"""A masked language model as ``cloak unveil``'s context scorer: ``cloak unveil --scorer mlm --model DIR``.

Any BERT-style masked language model transformers loads with ``AutoModelForMaskedLM`` (a folder or a hub
name): ``mmbert pretrain``'s small BERT, bert-base-chinese, a RoBERTa. cloak finds this scorer through the
entry-point group ``mmcloak.unveil_scorers`` and never imports mmbert (torch) itself.

A candidate's gain is how much likelier the model finds what it reads back than what is written, each in
the span masked out of the same context: ``sum log P(dst's tokens)`` with the span's place holding one mask
a token of ``dst``, less the same for the written span (the tokens of each scored independently given the
context, one forward pass each, all of a batch's at once). The context is the text around the span, up to
``CONTEXT`` tokens either side.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import torch

from cloak.common.models import loading_model

CONTEXT = 48  # tokens of context kept either side of a span
BATCH = 64  # masked inputs a forward pass
MODEL_FOLDER = "mlm"  # the model, as a saved unveiler keeps it


class MaskedLMScorer:
    """``model``: the masked language model's folder or hub name (required: mmcloak ships none)."""

    name = "mlm"

    def __init__(self, model: str = "") -> None:
        if not model:
            raise ValueError("the mlm scorer needs a masked language model: --model DIR (a folder `mmbert pretrain` "
                             "writes, or a hub name such as bert-base-chinese)")
        self.model = model
        self.network = self.tokenizer = None

    def __getstate__(self) -> dict:  # a worker loads the model again
        return {"model": self.model, "network": None, "tokenizer": None}

    @property
    def reach(self) -> int:
        return 1 << 30  # the whole text: a candidate's gain depends on every other word of it

    def prepare(self) -> None:
        if self.network is not None:
            return
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        with loading_model("masked language model", self.model, "pass a local folder: --model DIR"):
            self.tokenizer = AutoTokenizer.from_pretrained(self.model)
            self.network = AutoModelForMaskedLM.from_pretrained(self.model).eval()

    def save(self, directory: str) -> str:
        """The model and its tokenizer, as transformers saves them (a folder this scorer reads back)."""
        self.prepare()
        folder = os.path.join(directory, MODEL_FOLDER)
        self.network.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        return MODEL_FOLDER

    def gains_batch(self, items: Sequence[tuple[str, Sequence]]) -> list[list[float]]:
        self.prepare()
        inputs, answers = [], []
        for text, candidates in items:
            for c in candidates:
                for filled in (c.dst, text[c.start:c.end]):
                    ids, targets = self._masked(text[:c.start], filled, text[c.end:])
                    inputs.append(ids)
                    answers.append(targets)
        scores = self._score(inputs, answers)
        gains, k = [], 0
        for _, candidates in items:
            gains.append([scores[k + 2 * i] - scores[k + 2 * i + 1] for i in range(len(candidates))])
            k += 2 * len(candidates)
        return gains

    def _masked(self, left: str, filled: str, right: str) -> tuple[list[int], list[tuple[int, int]]]:
        """The input ids with ``filled``'s tokens masked, and (position, token id) of each."""
        tok = self.tokenizer
        before = tok(left, add_special_tokens=False)["input_ids"][-CONTEXT:]
        middle = tok(filled, add_special_tokens=False)["input_ids"] or [tok.unk_token_id]
        after = tok(right, add_special_tokens=False)["input_ids"][:CONTEXT]
        ids = [tok.cls_token_id, *before, *[tok.mask_token_id] * len(middle), *after, tok.sep_token_id]
        return ids, [(1 + len(before) + i, token) for i, token in enumerate(middle)]

    @torch.no_grad()
    def _score(self, inputs: list[list[int]], answers: list[list[tuple[int, int]]]) -> list[float]:
        """Each input's sum of log P(its answer at each masked place)."""
        scores = []
        pad = self.tokenizer.pad_token_id
        for start in range(0, len(inputs), BATCH):
            chunk = inputs[start:start + BATCH]
            width = max(map(len, chunk))
            ids = torch.tensor([x + [pad] * (width - len(x)) for x in chunk])
            mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in chunk])
            logits = self.network(input_ids=ids, attention_mask=mask).logits.log_softmax(-1)
            for row, wanted in enumerate(answers[start:start + BATCH]):
                scores.append(float(sum(logits[row, place, token] for place, token in wanted)))
        return scores
