"""Records -> model inputs: token ids, pooled speech frames, labels, and the clean text's ids (and, for
training with whole terms masked, which term each token belongs to).

Featurising happens once, before training (tokenising, and speech from the cache), so an epoch only
pads and stacks. Vision needs nothing here: the model looks its inputs up by token id.

Text is cut to ``max_length`` tokens (the tokenizer's ``model_max_length``, which training sets and
saves with the model), and speech is made for the part of the text those tokens cover: a long post
costs no more speech than the model reads.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .speech_features import SpeechFeatures


class Featurizer:
    """``encode(records)`` -> examples; ``collate(examples)`` -> a padded batch of tensors."""

    def __init__(self, tokenizer, max_length: int | None = None, speech: SpeechFeatures | None = None) -> None:
        self.tokenizer, self.speech = tokenizer, speech
        self.max_length = max_length or tokenizer.model_max_length

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer([self._enough(t) for t in texts], truncation=True,
                              max_length=self.max_length)["input_ids"]

    def token_spans(self, texts: list[str]) -> list[list[tuple[int, int] | None]]:
        """The characters each input position covers, aligned with ``input_ids`` (None for the special
        tokens); needs a fast tokenizer (a slow one gives no offsets)."""
        if not getattr(self.tokenizer, "is_fast", False):
            raise NotImplementedError("a slow tokenizer gives no character offsets")
        found = self.tokenizer([self._enough(t) for t in texts], truncation=True, max_length=self.max_length,
                               return_offsets_mapping=True, return_special_tokens_mask=True)
        return [[None if special else tuple(span) for span, special in zip(spans, specials)]
                for spans, specials in zip(found["offset_mapping"], found["special_tokens_mask"])]

    def term_ids(self, texts: list[str], find: Callable[[str], list[tuple[int, int]]]) -> list[list[int]]:
        """Per text, aligned with ``input_ids``: the number (1, 2, ... in order) of the term each token
        overlaps, 0 for none; ``find(text)``: the terms' character spans (``cloak.Lexicon.find``)."""
        out = []
        for text, spans in zip(texts, self.token_spans(texts)):
            terms = find(text)
            out.append([next((k for k, (s, e) in enumerate(terms, 1) if span and span[0] < e and span[1] > s), 0)
                        for span in spans])
        return out

    def _enough(self, text: str) -> str:
        """A prefix of ``text`` whose first ``max_length`` tokens are the whole text's, so that a huge
        post is not tokenised whole (1 MB of text took 600 MB to tokenise). A word gives at most
        ``max_input_chars_per_word`` (100) wordpieces, so a prefix with that many tokens to spare ends
        in a word that the cut may split only past the tokens kept."""
        wordpiece = getattr(self.tokenizer, "wordpiece_tokenizer", None)
        need = self.max_length + getattr(wordpiece, "max_input_chars_per_word", 100)
        k = 4 * need
        while k < len(text):
            if len(self.tokenizer.tokenize(text[:k])) >= need:
                return text[:k]
            k *= 2
        return text

    def read_part(self, text: str) -> str:
        """The longest prefix of ``text`` that fits in ``max_length`` tokens: what the model reads of it."""
        budget = self.max_length - self.tokenizer.num_special_tokens_to_add()

        def fits(k: int) -> bool:
            return len(self.tokenizer.tokenize(text[:k])) <= budget

        # A token takes at least one character, so about ``budget`` characters fit; gallop up from there
        # (a 1 MB post costs a few short tokenisations), then bisect.
        low, high = 0, min(len(text), max(budget, 1))
        while fits(high):
            if high == len(text):
                return text
            low, high = high, min(len(text), 2 * high)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if fits(middle) else (low, middle)
        return text[:low]

    def encode(self, records: Sequence[dict], text_field: str = "text", labels: bool = False,
               progress: bool | None = None,
               terms: Callable[[str], list[tuple[int, int]]] | None = None) -> list[dict]:
        """Examples of records; ``labels``: with each record's ``label`` (an int already: see
        ``cloak.common.io.read_records(labels=True)``), for training; ``terms``: with each token's term
        (``term_ids``; ``terms(text)`` finds the terms' spans)."""
        texts = [r[text_field] for r in records]
        ids = self._ids(texts)
        # Only cloaked records have a different clean text to tokenise (stage 1 aligns to it).
        cloaked = [i for i, r in enumerate(records) if r.get("source_text") not in (None, texts[i])]
        source_ids = list(ids)
        for i, src in zip(cloaked, self._ids([records[i]["source_text"] for i in cloaked]) if cloaked else []):
            source_ids[i] = src
        examples = [{"input_ids": a, "source_ids": b} for a, b in zip(ids, source_ids)]
        if labels:
            for example, record in zip(examples, records):
                example["labels"] = record["label"]
        if terms is not None:
            for example, found in zip(examples, self.term_ids(texts, terms)):
                example["term_ids"] = found
        if self.speech is not None:
            spoken = [self.read_part(t) if len(i) >= self.max_length else t for t, i in zip(texts, ids)]
            for example, feats in zip(examples, self.speech.features(spoken, progress=progress)):
                example["speech_features"] = feats
        return examples

    def collate(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        pad = self.tokenizer.pad_token_id
        batch = {}
        for key, mask_key in (("input_ids", "attention_mask"), ("source_ids", "source_mask")):
            ids = _padded([e[key] for e in examples], pad)
            batch[key], batch[mask_key] = ids, (ids != pad).long()
        if "term_ids" in examples[0]:
            batch["term_ids"] = _padded([e["term_ids"] for e in examples], 0)  # aligned with input_ids
        if "labels" in examples[0]:
            batch["labels"] = torch.tensor([e["labels"] for e in examples])
        if "example" in examples[0]:
            batch["examples"] = torch.tensor([e["example"] for e in examples])
        if "speech_features" in examples[0]:
            width = max(len(e["speech_features"]) for e in examples)
            dim = examples[0]["speech_features"].shape[1]
            feats = np.zeros((len(examples), width, dim), dtype=np.float32)
            mask = torch.zeros(len(examples), width, dtype=torch.long)
            for i, e in enumerate(examples):
                feats[i, :len(e["speech_features"])] = e["speech_features"]
                mask[i, :len(e["speech_features"])] = 1
            batch["speech_features"], batch["speech_mask"] = torch.from_numpy(feats), mask
        return batch


def _padded(rows: list[list[int]], value: int) -> torch.Tensor:
    """Rows of ints as one tensor, each padded with ``value`` to the longest."""
    out = torch.full((len(rows), max(len(r) for r in rows)), value, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, :len(row)] = torch.tensor(row)
    return out
