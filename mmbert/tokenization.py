"""The text tokenizer: bert-base-chinese's WordPiece vocabulary plus emoji as whole tokens.

Emoji are added because cloakers use them in place of words (黑人 -> 黑🧜): in bert-base-chinese they
are all [UNK], so neither the text embedding nor the glyph image (one per vocabulary entry) could tell
them apart. The 21,128 original ids are unchanged, so a bert-base-chinese checkpoint still loads.
"""
from __future__ import annotations

from importlib import resources

import emoji
from transformers import BertTokenizer, PreTrainedTokenizerBase

SKIN_TONES = range(0x1F3FB, 0x1F400)


def bundled_vocab() -> dict[str, int]:
    """bert-base-chinese's vocabulary (shipped in mmbert/data/vocab.txt)."""
    text = resources.files("mmbert").joinpath("data/vocab.txt").read_text(encoding="utf-8")
    # split("\n"), not splitlines(): a few entries are characters splitlines() would break on.
    return {token: i for i, token in enumerate(text.rstrip("\n").split("\n"))}


def emoji_tokens() -> list[str]:
    """Fully-qualified emoji without skin-tone modifiers, in a fixed order."""
    qualified = emoji.STATUS["fully_qualified"]
    return sorted(e for e, data in emoji.EMOJI_DATA.items()
                  if data.get("status") == qualified and not any(ord(c) in SKIN_TONES for c in e))


def build_tokenizer(vocab: str | dict[str, int] | None = None, add_emoji: bool = True) -> PreTrainedTokenizerBase:
    """A BERT WordPiece tokenizer over ``vocab`` (a vocab.txt path or a dict; default: bundled).

    Built from the vocabulary dict: in transformers 5, ``BertTokenizer(vocab_file=...)`` silently ends
    up with 5 tokens.
    """
    if vocab is None:
        vocab = bundled_vocab()
    elif isinstance(vocab, str):
        with open(vocab, encoding="utf-8") as f:
            vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    tokenizer = BertTokenizer(vocab=dict(vocab))
    if len(tokenizer) != len(vocab):
        raise RuntimeError(f"tokenizer has {len(tokenizer)} entries, the vocabulary {len(vocab)}")
    if add_emoji:
        tokenizer.add_tokens(emoji_tokens())
    return tokenizer


def vocabulary(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    """Every token string by id (added tokens included)."""
    # Not get_vocab(): with added tokens it can map two strings to one id, in hash order.
    return [t or "" for t in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))]
