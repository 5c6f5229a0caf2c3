"""The realism measures of ``bench.perturb``: not a benchmark itself.

For a cloak configuration's outputs (``Cloaked``) or a peer's (input, outputs) pairs: texts changed and
edits per changed text; for homophone (and radical) edits, the share of substituted Han characters whose
new character can be read with the replaced character's toneless syllable (in context, from
``lazy_pinyin`` of the source text); the share of introduced Han characters among ``common_chars()``.
"""
from __future__ import annotations

from collections import Counter

SAME_SOUND_OPS = ("homophone", "radical")  # ops whose substitutes should read like what they replace


def share(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


class Reader:
    """Context readings of the source texts (toneless, one per code point, None where none)."""

    def __init__(self) -> None:
        from pypinyin import lazy_pinyin

        self._lazy = lazy_pinyin
        self._memo: dict[str, list[str | None]] = {}
        self.misaligned = 0  # texts whose lazy_pinyin did not give one item per code point

    def readings(self, text: str) -> list[str | None]:
        got = self._memo.get(text)
        if got is None:
            items = self._lazy(text, errors=lambda s: [None] * len(s))
            if len(items) != len(text):
                self.misaligned += 1
                items = [None] * len(text)
            got = self._memo[text] = [x or None for x in items]
        return got

    def reading_at(self, text: str, i: int) -> str | None:
        from cloak.pinyin import char_readings

        r = self.readings(text)[i]
        if r is None:
            first = char_readings(text[i])
            r = first[0].rstrip("012345") if first else None
        return r


def toneless_readings(ch: str) -> set[str]:
    from cloak.pinyin import char_readings

    return {r.rstrip("012345") for r in char_readings(ch)}


class CharStats:
    """Sound match of substituted Han characters and commonness of introduced Han characters."""

    def __init__(self, reader: Reader) -> None:
        from cloak.hanzi import common_chars, is_han

        self.reader, self.common, self.is_han = reader, common_chars(), is_han
        self.subst = 0           # substituted Han characters (source Han, replaced by another char)
        self.sound_match = 0
        self.no_source_reading = 0
        self.mismatch_examples: list[str] = []
        self.rare_examples: Counter = Counter()
        self.unaligned_edits = 0  # homophone edits whose src and dst differ in length

    def sound(self, source: str, pos: int, old: str, new: str) -> None:
        if old == new or not self.is_han(old):
            return
        self.subst += 1
        want = self.reader.reading_at(source, pos)
        if want is None:
            self.no_source_reading += 1
            return
        if want in toneless_readings(new):
            self.sound_match += 1
        elif len(self.mismatch_examples) < 12:
            self.mismatch_examples.append(
                f"{old}({want}) -> {new}({'/'.join(sorted(toneless_readings(new))) or '?'}) "
                f"in …{source[max(0, pos - 4):pos + 5]}…")

    def sound_summary(self) -> dict:
        return {"substituted_han_chars": self.subst, "same_toneless_reading": self.sound_match,
                "share": share(self.sound_match, self.subst),
                "no_context_reading": self.no_source_reading,
                "unaligned_edits_skipped": self.unaligned_edits,
                "mismatch_examples": self.mismatch_examples}


class CommonStats:
    def __init__(self) -> None:
        from cloak.hanzi import common_chars, is_han

        self.common, self.is_han = common_chars(), is_han
        self.han = self.han_common = 0
        self.changed_han = self.changed_han_common = 0
        self.rare: Counter = Counter()

    def add_dst(self, src: str, dst: str) -> None:
        """Every Han character of dst (the brief's measure) and those at changed positions only."""
        aligned = len(src) == len(dst)
        for k, ch in enumerate(dst):
            if not self.is_han(ch):
                continue
            ok = ch in self.common
            self.han += 1
            self.han_common += ok
            if not ok:
                self.rare[ch] += 1
            if not aligned or src[k] != ch:
                self.changed_han += 1
                self.changed_han_common += ok

    def summary(self) -> dict:
        return {"introduced_han_chars": self.han, "in_common_chars": self.han_common,
                "share": share(self.han_common, self.han),
                "changed_positions_only": {"introduced_han_chars": self.changed_han,
                                           "in_common_chars": self.changed_han_common,
                                           "share": share(self.changed_han_common, self.changed_han)},
                "top_uncommon": "".join(ch for ch, _ in self.rare.most_common(30))}


def realism_cloak(outs, reader: Reader) -> dict:
    """Realism of one cloak configuration's outputs (``Cloaked`` objects)."""
    from cloak import EditError, apply_edits, invert_edits

    changed = [o for o in outs if o.edits]
    inconsistent = 0  # outputs whose edits do not replay (source -> text) or invert (text -> source)
    for o in changed:
        try:
            ok = apply_edits(o.source, o.edits) == o.text and invert_edits(o.text, o.edits) == o.source
        except EditError:
            ok = False
        inconsistent += not ok
    edits_by_op = Counter(e.op for o in outs for e in o.edits)
    common = CommonStats()
    sound = CharStats(reader)
    for o in outs:
        for e in o.edits:
            common.add_dst(e.src, e.dst)
            if e.op in SAME_SOUND_OPS:
                if len(e.src) != len(e.dst):
                    sound.unaligned_edits += 1
                    continue
                for k, (a, b) in enumerate(zip(e.src, e.dst)):
                    sound.sound(o.source, e.start + k, a, b)
    result = {
        "texts": len(outs),
        "texts_changed": len(changed),
        "texts_changed_share": share(len(changed), len(outs)),
        "edits": sum(edits_by_op.values()),
        "mean_edits_per_changed_text": round(sum(len(o.edits) for o in changed) / len(changed), 3)
        if changed else None,
        "edits_by_op": dict(edits_by_op.most_common()),
        "edits_not_replayable": inconsistent,
        "common_chars": common.summary(),
    }
    if sound.subst or sound.unaligned_edits:
        result["homophone_sound"] = sound.sound_summary()
    return result


def realism_peer(pairs, reader: Reader) -> dict:
    """Realism of a peer's outputs: ``pairs`` of (input, [outputs]); outputs are aligned to the input
    character by character (both peers substitute in place); an output of another length is aligned
    with difflib and only its equal-length replaced blocks are counted."""
    import difflib

    common = CommonStats()
    sound = CharStats(reader)
    outputs = changed_outputs = changed_chars = texts_with_change = realigned = 0
    for source, outs in pairs:
        any_change = False
        for out in outs:
            outputs += 1
            if out == source:
                continue
            any_change = True
            changed_outputs += 1
            if len(out) == len(source):
                blocks = [(0, len(source), 0)]
            else:
                realigned += 1
                sm = difflib.SequenceMatcher(None, source, out, autojunk=False)
                blocks = [(i1, i2, j1) for tag, i1, i2, j1, j2 in sm.get_opcodes()
                          if tag == "replace" and i2 - i1 == j2 - j1]
            for i1, i2, j1 in blocks:
                for k in range(i2 - i1):
                    a, b = source[i1 + k], out[j1 + k]
                    if a != b:
                        changed_chars += 1
                        common.add_dst(a, b)
                        sound.sound(source, i1 + k, a, b)
        texts_with_change += any_change
    return {
        "texts": len(pairs),
        "outputs": outputs,
        "texts_changed": texts_with_change,
        "texts_changed_share": share(texts_with_change, len(pairs)),
        "outputs_changed_share": share(changed_outputs, outputs),
        "mean_changed_chars_per_changed_output": round(changed_chars / changed_outputs, 3)
        if changed_outputs else None,
        "outputs_of_other_length": realigned,
        "common_chars": common.summary(),
        "homophone_sound": sound.sound_summary(),
    }


def realism_styles(texts: list[str], reader: Reader) -> dict:
    """Realism of every style the ops' examples show (lexicon targets, one pass, seed 0)."""
    from cloak import Perturber
    from cloak.ops import example_specs

    found = {}
    for spec in example_specs():
        p = Perturber(ops=spec, targets="lexicon", seed=0)
        found[spec] = realism_cloak([p(text, key=i) for i, text in enumerate(texts)], reader)
    return found
