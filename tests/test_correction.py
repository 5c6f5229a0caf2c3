"""C²TU's sentence-level correction (cloak.unveil.correction) on posts made by hand, each outcome counted as
Ma et al. 2025 define it."""
import pytest

from cloak.unveil.correction import outcome, sentence_correction


@pytest.mark.parametrize("source, prediction, gold, expected", [
    ("拜仁都是", "白人都是", "白人都是", ("tp", True)),     # a cloak read back whole
    ("拜仁都是", "白人都似", "白人都是", ("fn", True)),     # read back, and another character changed
    ("拜仁都是", "拜仁都是", "白人都是", ("fn", False)),    # left cloaked
    ("你好", "你好", "你好", ("tn", False)),                # a clean post left as it is
    ("你好", "尼好", "你好", ("fp", True)),                 # a clean post changed
    ("tx都是", "同性恋都是", "同性恋都是", ("fn", True)),  # another length than the source: a miss, always
    ("你好", "你好啊", "你好", ("fn", True)),
])
def test_each_outcome(source, prediction, gold, expected):
    assert outcome(source, prediction, gold) == expected


def test_precision_counts_every_post_changed_and_recall_every_cloaked_post():
    sources = ["拜仁都是", "拜仁都是", "你好", "你好", "黑鬼", "tx都是"]
    predictions = ["白人都是", "拜仁都是", "你好", "尼好", "黑人", "同性恋都是"]
    golds = ["白人都是", "白人都是", "你好", "你好", "黑鬼", "同性恋都是"]
    c = sentence_correction(sources, predictions, golds)
    assert (c.tp, c.fp, c.fn, c.tn, c.changed) == (1, 2, 2, 1, 4)
    assert c.precision == pytest.approx(1 / 4) and c.recall == pytest.approx(1 / 3)
    assert c.f1 == pytest.approx(2 * (1 / 4) * (1 / 3) / (1 / 4 + 1 / 3))
    assert c.clean_kept == pytest.approx(1 / 3)  # of the three posts with nothing cloaked, one left as it is


def test_nothing_read_back_scores_zero_and_unequal_inputs_are_refused():
    c = sentence_correction(["拜仁"], ["拜仁"], ["白人"])
    assert (c.precision, c.recall, c.f1, c.clean_kept) == (0.0, 0.0, 0.0, None)
    with pytest.raises(ValueError, match="same post"):
        sentence_correction(["拜仁"], [], ["白人"])
