"""The text tokenizer: bert-base-chinese's WordPiece vocabulary plus emoji as whole tokens, or a
backbone's own tokenizer (WordPiece, SentencePiece such as XLM-R's) with the emoji it cannot keep whole.

Emoji are added because cloakers use them in place of words (黑人 -> 黑🧜): in bert-base-chinese they
are all [UNK] (in XLM-R's vocabulary half of them are <unk>, others split into pieces), so neither the
text embedding nor the glyph image (one per vocabulary entry) could tell them apart. The original ids
are unchanged, so the backbone's checkpoint still loads.

A piece of a vocabulary may be several characters (XLM-R's 都是, 垃圾): it is one token, drawn whole
(one glyph image) and read as its characters' pinyin; ``piece_texts`` gives what each entry stands for.
"""
from __future__ import annotations

from importlib import resources

import os

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
    return one_id_per_text(tokenizer)


def one_id_per_text(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """The tokenizer, each text read as one id. BERT's normaliser drops the tag characters of the flags of
    England, Scotland and Wales, so added (normalised) tokens 🏴 and those three flags all read "🏴", and the
    Rust tokenizer took one of the four ids at random at each load (its hash map's order): the same post
    was another input from one run to the next. The first token of such a group (the lowest id) stays
    normalised; the others are matched as written, so each flag keeps its id and 🏴 reads as the first.
    No id moves: a model saved before reads as it was trained, but for that choice."""
    from tokenizers import AddedToken

    normalizer = tokenizer.backend_tokenizer.normalizer if getattr(tokenizer, "is_fast", False) else None
    if normalizer is None:
        return tokenizer
    seen, as_written = set(), []
    for _, token in sorted(tokenizer.added_tokens_decoder.items()):
        if token.special or not token.normalized:
            continue
        text = normalizer.normalize_str(token.content)
        if text in seen:
            as_written.append(AddedToken(token.content, single_word=token.single_word, lstrip=token.lstrip,
                                         rstrip=token.rstrip, normalized=False))
        seen.add(text)
    if as_written:
        tokenizer.add_tokens(as_written)  # the same contents: their flag changes, their ids stay
    return tokenizer


def load_tokenizer(source: str | None) -> PreTrainedTokenizerBase:
    """The tokenizer saved with a model or backbone (a folder or hub name), or the bundled
    bert-base-chinese vocabulary plus emoji for None or a folder that holds none (a bare checkpoint)."""
    from transformers import AutoTokenizer

    from cloak.common.models import loading_model

    if not source or (os.path.isdir(source) and not os.path.isfile(os.path.join(source, "tokenizer_config.json"))):
        return build_tokenizer()
    with loading_model("backbone", source, hint="pass a BERT folder: --from DIR or --backbone DIR"):
        return one_id_per_text(AutoTokenizer.from_pretrained(source))


def backbone_tokenizer(source: str | None) -> PreTrainedTokenizerBase:
    """``load_tokenizer`` for a model to be trained from ``source``: with every emoji a whole token
    (``add_emoji``). A trained model's own tokenizer is loaded as saved: its ids must match its weights."""
    tokenizer = load_tokenizer(source)
    add_emoji(tokenizer)
    return tokenizer


def add_emoji(tokenizer: PreTrainedTokenizerBase) -> int:
    """Add, as whole tokens, the emoji the tokenizer does not read as one piece of their own (XLM-R
    reads half of them as <unk>, cuts keycaps and ZWJ sequences into pieces and normalises 🈶 to 有);
    returns how many. A tokenizer that already keeps every emoji whole (one saved with them) is left
    as it is, so ids never move. Added unnormalised, so they match the text as written."""
    from tokenizers import AddedToken

    wanted, added = emoji_tokens(), set(tokenizer.added_tokens_decoder) - set(tokenizer.all_special_ids)

    def whole(emoji_text: str, ids: list[int]) -> bool:
        pieces = [(i, piece_text(p)) for i, p in zip(ids, tokenizer.convert_ids_to_tokens(ids)) if piece_text(p)]
        # an added token may be stored normalised (BERT's normaliser drops U+FE0F): it is the emoji's all the same
        return len(pieces) == 1 and (pieces[0][0] in added or pieces[0][1] == emoji_text)

    found = tokenizer(wanted, add_special_tokens=False)["input_ids"]
    missing = [e for e, ids in zip(wanted, found) if not whole(e, ids)]
    return tokenizer.add_tokens([AddedToken(e, normalized=False) for e in missing]) if missing else 0


def piece_text(token: str) -> str:
    """The characters a vocabulary piece stands for: WordPiece's continuation mark and SentencePiece's
    word-start mark removed (``##人`` -> 人, ``▁我们`` -> 我们, the bare ``▁`` -> '': a space)."""
    if token.startswith("##") and len(token) > 2:
        return token[2:]
    return token.lstrip("\u2581")


def piece_texts(tokenizer: PreTrainedTokenizerBase, rows: int = 0) -> list[str]:
    """What each vocabulary entry stands for, by id (``piece_text``): what its glyph image draws and
    its pinyin reads; '' for the special tokens ([CLS], <s>, <pad>, ...), which have neither, and for
    the rows up to ``rows`` that a model's embedding table has past its tokenizer's (e5 has 35)."""
    special = set(tokenizer.all_special_ids)
    pieces = ["" if i in special else piece_text(t) for i, t in enumerate(vocabulary(tokenizer))]
    return pieces + [""] * (rows - len(pieces))


def vocabulary(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    """Every token string by id (added tokens included)."""
    # Not get_vocab(): with added tokens it can map two strings to one id, in hash order.
    return [t or "" for t in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))]
