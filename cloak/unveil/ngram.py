"""A character n-gram language model: ``cloak unveil``'s default context scorer, which needs no weights.

Interpolated Kneser-Ney smoothing (Chen and Goodman 1999, "An empirical study of smoothing techniques for
language modeling", Computer Speech & Language 13(4)) with one discount an order, fitted on clean posts in
a few seconds, stored in backoff form: the probability of each n-gram seen at least ``min_count`` times
and the backoff weight of each context, so that P(c | history) is one or two dictionary look-ups. Every
text is read between a start and an end mark, so the first and last characters of a post are scored as
such; a character never seen takes the unigram level's share for the unseen.

A model is a gzip-compressed TSV file (``ngram``, ``logprob``, ``backoff``; natural logarithms, four
decimals, sorted): the same texts give the same bytes. ``cloak fit-lm --train posts.jsonl --out my.lm``
fits one; mmcloak ships one fitted on COLD's training posts and SWSR's comments (``data/cold_swsr.lm.gz``,
``data/LEXICON.md`` says how it was made).
"""
from __future__ import annotations

import gzip
import io
import math
import os
from collections import Counter
from collections.abc import Iterable
from importlib import resources

from ..common.cache import content_cached

BOS, EOS = "\x02", "\x03"
SHIPPED = "data/cold_swsr.lm.gz"
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPE = {v: k for k, v in _ESCAPES.items()}
HEADER = "# mmcloak character n-gram model"
# cloak fit-lm's defaults: characters an n-gram spans, the fewest times one is kept, and how frequent a word of
# jieba's dictionary is to be fitted on beside the posts
ORDER, MIN_COUNT, DICTIONARY = 4, 2, 100
SEEN = 2_000_000  # n-gram look-ups remembered, at most


def model_bytes(path: str | os.PathLike | None = None) -> bytes:
    """The bytes of a model file (None: the one mmcloak ships), as ``CharNgramLM.load`` reads them."""
    if path is None:
        return resources.files("cloak").joinpath(SHIPPED).read_bytes()
    if not os.path.isfile(path):
        raise ValueError(f"language model not found: {path} (fit one with `cloak fit-lm`)")
    with open(path, "rb") as f:
        return f.read()


class CharNgramLM:
    """log P of characters in context. ``logprob``: {n-gram: log P(last | the rest)}; ``backoff``:
    {context: log of its backoff weight}; ``unknown``: log P of a character never seen."""

    def __init__(self, order: int, logprob: dict[str, float], backoff: dict[str, float], unknown: float,
                 info: dict | None = None) -> None:
        self.order, self.logprob_, self.backoff_, self.unknown = order, logprob, backoff, unknown
        self.info = info or {}
        self._seen: dict[str, float] = {}  # n-grams looked up already (a post's words recur across posts)

    def __repr__(self) -> str:
        return f"CharNgramLM(order={self.order}, ngrams={len(self.logprob_)})"

    # -- scoring ------------------------------------------------------------------------------------

    def char_logprob(self, history: str, ch: str) -> float:
        """log P(ch | the last order-1 characters of history)."""
        return self.gram_logprob(history[max(0, len(history) - self.order + 1):] + ch if self.order > 1 else ch)

    def gram_logprob(self, gram: str) -> float:
        """log P(the last character of ``gram`` | the others), ``gram`` at most ``order`` long."""
        lp = self._seen.get(gram)
        if lp is None:
            if len(self._seen) > SEEN:
                self._seen.clear()
            lp = self._seen[gram] = self._lookup(gram)
        return lp

    def _lookup(self, gram: str) -> float:
        found, backoff, weight = self.logprob_, self.backoff_, 0.0
        while True:
            lp = found.get(gram)
            if lp is not None:
                return weight + lp
            if len(gram) == 1:
                return weight + self.unknown
            weight += backoff.get(gram[:-1], 0.0)
            gram = gram[1:]

    def span_logprob(self, padded: str, start: int, end: int) -> float:
        """The log P of ``padded[start:end]`` given what comes before it (``padded``: a text between BOS and EOS)."""
        n, gram_logprob, total = self.order - 1, self.gram_logprob, 0
        for i in range(start, end):
            total += gram_logprob(padded[i - n if i > n else 0:i + 1])
        return total

    def logprob(self, text: str) -> float:
        """log P of a whole text (its end included)."""
        padded = BOS + text + EOS
        return self.span_logprob(padded, 1, len(padded))

    # -- fitting ------------------------------------------------------------------------------------

    @classmethod
    def fit(cls, texts: Iterable[str], order: int = ORDER, min_count: int = MIN_COUNT,
            words: Iterable[tuple[str, int]] = ()) -> CharNgramLM:
        """Fit on ``texts``; n-grams of two characters or more seen fewer than ``min_count`` times are
        not stored (their probability comes through the backoff weights). ``words``: (word, times), a
        dictionary's words with a weight: which characters make words beyond what the texts hold (侵蚀,
        which a corpus of posts may never write). Their n-grams count ``times`` at every order, where a
        text's count at the lower orders is how many characters it follows (Kneser-Ney's continuation),
        which a word listed on its own has none of."""
        if order < 1 or min_count < 1:
            raise ValueError("order and min_count must be at least 1")
        counts: list[Counter] = [Counter() for _ in range(order + 1)]
        texts_seen = 0
        for text in texts:
            texts_seen += 1
            s = BOS + text + EOS
            for k in range(1, order + 1):
                counts[k].update(s[i:i + k] for i in range(len(s) - k + 1))
        if not texts_seen:
            raise ValueError("no texts to fit a language model on")
        listed: list[Counter] = [Counter() for _ in range(order + 1)]
        for word, times in words:
            for k in range(1, min(order, len(word)) + 1):
                for i in range(len(word) - k + 1):
                    listed[k][word[i:i + k]] += times
        for k in range(1, order + 1):
            counts[k].update(listed[k])
        logprob, backoff, unknown = _kneser_ney(counts, order, listed)
        info = {"texts": texts_seen, "min_count": min_count}
        if min_count == 1:
            return cls(order, logprob, {h: w for h, w in backoff.items() if h}, unknown, info)
        model = cls(order, {g: lp for g, lp in logprob.items() if len(g) == 1 or counts[len(g)][g] >= min_count},
                    {}, unknown, info)
        model._renormalise()
        return model

    def _renormalise(self) -> None:
        """Backoff weights that make each context's distribution sum to one again after pruning: the mass
        its n-grams left out had, shared as the lower order shares it (as ARPA models are pruned)."""
        children: dict[str, list[str]] = {}
        for gram in self.logprob_:
            if len(gram) > 1:
                children.setdefault(gram[:-1], []).append(gram[-1])
        for history in sorted(children, key=len):  # a lower order's weights are needed first
            kept = sum(math.exp(self.logprob_[history + ch]) for ch in children[history])
            lower = sum(math.exp(self._lookup(history[1:] + ch)) for ch in children[history])
            self.backoff_[history] = math.log(max(1e-12, 1 - kept) / max(1e-12, 1 - lower))

    # -- files --------------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as a gzip TSV, byte for byte the same for the same model."""
        from ..common.io import write_atomic

        write_atomic(path, self.to_bytes())

    def to_bytes(self) -> bytes:
        """The model as ``save`` writes it (``from_bytes`` reads it back)."""
        lines = [f"{HEADER}\torder={self.order}\tunknown={self.unknown:.4f}"
                 + "".join(f"\t{k}={v}" for k, v in sorted(self.info.items()))]
        for gram in sorted(self.logprob_):
            bow = self.backoff_.get(gram)
            lines.append(f"{_escape(gram)}\t{self.logprob_[gram]:.4f}\t{'' if bow is None else f'{bow:.4f}'}")
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as f:
            f.write(("\n".join(lines) + "\n").encode("utf-8"))
        return buffer.getvalue()

    @classmethod
    def load(cls, path: str | os.PathLike | None = None) -> CharNgramLM:
        """A model file written by ``save`` (None: the one mmcloak ships). What a file holds is parsed once and
        kept in the cache directory under a hash of its bytes (its tables load in half the time its text takes
        to parse, a third of a second for 500k n-grams); a file that changes is parsed again."""
        return cls.from_bytes(model_bytes(path), SHIPPED if path is None else os.fspath(path))

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "language model") -> CharNgramLM:
        """A model from what ``to_bytes`` gave (``name`` says where it came from in errors), parsed once (``load``)."""

        def parsed() -> tuple:
            model = cls._read(io.BytesIO(data), name)
            return model.order, model.logprob_, model.backoff_, model.unknown, model.info

        return cls(*content_cached("ngram", data, parsed, _is_model))

    @classmethod
    def _read(cls, raw, name: str) -> CharNgramLM:
        try:
            text = gzip.GzipFile(fileobj=raw).read().decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError) as e:
            raise ValueError(f"{name}: not a language model written by `cloak fit-lm` ({e})") from None
        header, *lines = text.rstrip("\n").split("\n")
        if not header.startswith(HEADER):
            raise ValueError(f"{name}: not a language model written by `cloak fit-lm`")
        fields = dict(item.split("=", 1) for item in header.split("\t")[1:])
        logprob, backoff = {}, {}
        for number, line in enumerate(lines, 2):
            try:
                gram, lp, bow = line.split("\t")
                gram = _unescape(gram)
                logprob[gram] = float(lp)
                if bow:
                    backoff[gram] = float(bow)
            except ValueError:
                raise ValueError(f"{name}, line {number}: expected an n-gram, its log probability and its "
                                 "backoff weight") from None
        order, unknown = int(fields.pop("order")), float(fields.pop("unknown"))
        return cls(order, logprob, backoff, unknown, fields)


def _is_model(value: object) -> bool:
    """Whether a cached value has the shape of ``CharNgramLM``'s arguments."""
    return (isinstance(value, tuple) and len(value) == 5 and isinstance(value[0], int)
            and isinstance(value[1], dict) and isinstance(value[2], dict) and isinstance(value[3], float)
            and isinstance(value[4], dict))


def dictionary_words(min_frequency: int) -> list[tuple[str, int]]:
    """jieba's dictionary words of two characters or more at least this frequent (0: none), each weighted
    1 + log10 of its frequency: what ``fit(words=...)`` takes."""
    if min_frequency <= 0:
        return []
    from ..hanzi import word_frequencies

    return [(w, 1 + int(math.log10(f))) for w, f in word_frequencies().items() if f >= min_frequency and len(w) >= 2]


def _kneser_ney(counts: list[Counter], order: int,
                listed: list[Counter]) -> tuple[dict[str, float], dict[str, float], float]:
    """Interpolated Kneser-Ney: (log P of every n-gram seen, log backoff weight of every context, log P of
    an unseen character). Lower orders count the distinct characters before an n-gram (its continuations),
    except n-grams that start a text, which nothing can precede, and ``listed`` ones (words of a
    dictionary), which count as they are."""
    adjusted: list[Counter] = [Counter() for _ in range(order + 1)]
    adjusted[order] = counts[order]
    for k in range(1, order):
        for gram in counts[k + 1]:
            adjusted[k][gram[1:]] += 1
        for gram, c in counts[k].items():
            if gram.startswith(BOS) and k > 1:  # the start mark itself is never predicted
                adjusted[k][gram] = c
        adjusted[k].update(listed[k])
    logprob: dict[str, float] = {}
    backoff: dict[str, float] = {}
    unknown = 0.0
    for k in range(1, order + 1):
        grams = adjusted[k]
        n1 = sum(1 for c in grams.values() if c == 1)
        n2 = sum(1 for c in grams.values() if c == 2)
        discount = n1 / (n1 + 2 * n2) if n1 + n2 else 0.5
        totals: Counter = Counter()
        types: Counter = Counter()
        for gram, c in grams.items():
            totals[gram[:-1]] += c
            types[gram[:-1]] += 1
        gamma = {h: discount * types[h] / totals[h] for h in totals}
        if k == 1:
            uniform = 1 / (len(grams) + 1)  # the unseen character is one more in the vocabulary
            unknown = math.log(gamma[""] * uniform)
        for gram, c in grams.items():
            h = gram[:-1]
            lower = uniform if k == 1 else math.exp(logprob[gram[1:]])
            logprob[gram] = math.log(max(c - discount, 0) / totals[h] + gamma[h] * lower)
        backoff.update({h: math.log(g) for h, g in gamma.items()})
    return logprob, backoff, unknown


def _escape(gram: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in gram)


def _unescape(gram: str) -> str:
    if "\\" not in gram:
        return gram
    out, i = [], 0
    while i < len(gram):
        pair = gram[i:i + 2]
        if pair in _UNESCAPE:
            out.append(_UNESCAPE[pair])
            i += 2
        else:
            out.append(gram[i])
            i += 1
    return "".join(out)
