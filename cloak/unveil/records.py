"""Unveiled records: what ``cloak unveil`` writes for each record, through ``cloak.run``'s engine.

An unveiled record keeps every input field, replaces ``text`` with the text read back, and adds
``unveiled_from`` (the text as it was read, cloaks and all) and ``unveil`` = ``{ops, settings, edits}``:
the readers that restored something, the unveiler's settings (``Unveiler.spec()``, which
``Unveiler.from_spec`` reads back) and the edits, whose ``start`` / ``end`` index ``unveiled_from``
(``src`` the cloak, ``dst`` what it hid). A record cloaked by ``cloak perturb`` keeps its ``source_text``
and ``cloak``, so the three texts stand side by side (``cloak show`` shows them).
"""
from __future__ import annotations

from ..common.io import dump_record
from .unveiler import Unveiler


class Unveiling:
    """The record transform of ``cloak unveil`` (``cloak.run.RecordTransform``)."""

    fields = ("unveiled_from", "unveil")

    def __init__(self, unveiler: Unveiler) -> None:
        self.unveiler = unveiler

    def prepare(self) -> Unveiling:
        self.unveiler.prepare()
        return self

    def transform(self, number: int, record: dict, text_field: str) -> tuple[list[bytes], int, list[str]]:
        out = self.unveiler(record[text_field])
        unveil = {"ops": out.ops, "settings": self.unveiler.spec(), "edits": [e.to_dict() for e in out.edits]}
        unveiled = {**record, text_field: out.text, "unveiled_from": record[text_field], "unveil": unveil}
        return [dump_record(unveiled)], int(out.changed), [e.op for e in out.edits]

    def fingerprint(self) -> list:
        return [self.unveiler.spec()]
