"""``cloak perturb`` and ``cloak unveil`` on a Hugging Face ``Dataset``: batch functions for ``Dataset.map``.

    >>> from cloak import Perturber
    >>> from cloak.hf import perturb_batch
    >>> cloak = perturb_batch(Perturber(ops="homophone,emoji", seed=0), variants=2)
    >>> cloaked = posts.map(cloak, batched=True, with_indices=True, num_proc=2,
    ...                     features=cloak.features(posts.features))          # doctest: +SKIP

Each row becomes what the command writes for the record on the same line of a JSONL file: every column
kept, the text replaced, and the provenance as columns (``source_text`` and ``cloak``; ``unveiled_from``
and ``unveil``), nested as in the JSONL (structs and lists, see ``cloak.common.formats.field_types``). A
cloak's randomness comes from (seed, line number, variant), and a row's line number is its index + 1
(``with_indices=True`` gives ``Dataset.map`` the indices of the whole dataset in every worker), so the
rows are the command's records whatever ``num_proc`` or ``batch_size``: the command on a JSONL file, on
its Parquet or on its saved Dataset, and ``Dataset.map`` give the same records. With ``variants`` K a
batch comes back K times as long (a record's K cloaks one after the other, as the command writes them).

``features=`` fixes the output's column types, as ``datasets`` asks of a map that adds columns: without it
the types come from the first batch written, and a batch whose posts all stay as they are would make the
edits a list of nulls that later edits cannot be written into. Needs the optional extra ``hf``
(``pip install 'mmcloak[hf]'``).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from .common.formats import field_types, require
from .common.io import RecordError, check_text
from .perturber import Perturber
from .run import Cloaking, RecordTransform
from .unveil.records import Unveiling
from .unveil.unveiler import Unveiler

ROWS_NAME = "dataset"  # what an error calls the rows: "dataset, item 7: field 'text': is empty"


class BatchTransform:
    """A record transform (``cloak.run.RecordTransform``: a ``Perturber``'s cloaks, an ``Unveiler``'s
    reading) as a batch function for ``Dataset.map(fn, batched=True, with_indices=True)``: a batch of
    columns and the rows' indices -> the columns of the records the command writes for those rows."""

    def __init__(self, transform: RecordTransform, text_field: str = "text") -> None:
        self.transform, self.text_field = transform, text_field

    def __call__(self, batch: Mapping[str, list], indices: Sequence[int] | None = None) -> dict[str, list]:
        if indices is None:
            raise TypeError("map with with_indices=True: a row's index + 1 is its line number, which with the seed "
                            "decides its cloak")
        self.transform.prepare()  # once a process: it returns at once when the tables are loaded
        names = list(batch)
        if self.text_field not in names:
            raise RecordError(ROWS_NAME, None, f"missing: the dataset's columns are {', '.join(names)}",
                              self.text_field)
        records: list[dict] = []
        for index, values in zip(indices, zip(*batch.values())):
            record = dict(zip(names, values))
            check_text(record[self.text_field], ROWS_NAME, None, self.text_field, item=index)
            lines, _, _ = self.transform.transform(index + 1, record, self.text_field)
            records.extend(json.loads(line) for line in lines)
        # the columns in the records' order: the input's, then those the transform adds (where not there already)
        return {name: [record[name] for record in records] for name in dict.fromkeys([*names, *self.transform.fields])}

    def features(self, features: Mapping):
        """The output's ``datasets.Features``, from the input's: the text a string, the provenance columns
        of their fixed types (a column the input has already stays where it is, as in the JSONL)."""
        datasets, pa = require("datasets"), require("pyarrow")
        known = field_types()
        added = pa.schema([(self.text_field, pa.string()), *((name, known[name]) for name in self.transform.fields)])
        return datasets.Features({**features, **datasets.Features.from_arrow_schema(added)})

    def map(self, dataset, **kwargs):
        """``dataset.map`` of this function with the arguments it needs (batched, with indices, the output's
        features); ``kwargs`` go to ``Dataset.map`` (``num_proc``, ``batch_size``, ``desc`` ...)."""
        return dataset.map(self, batched=True, with_indices=True, features=self.features(dataset.features), **kwargs)


def perturb_batch(perturber: Perturber, variants: int = 1, text_field: str = "text") -> BatchTransform:
    """The batch function of ``cloak perturb``: ``variants`` cloaked copies of each row."""
    return BatchTransform(Cloaking(perturber, variants), text_field)


def unveil_batch(unveiler: Unveiler, text_field: str = "text") -> BatchTransform:
    """The batch function of ``cloak unveil``: each row's cloaks read back."""
    return BatchTransform(Unveiling(unveiler), text_field)
