import pytest

from cloak import Edit, EditError, apply_edits, invert_edits


def test_replay_and_invert_mixed_edits():
    source = "白人都是垃圾"
    edits = [Edit("homophone", 0, 2, "白人", "拜仁"), Edit("noise", 4, 4, "", "*"),
             Edit("split", 5, 6, "圾", "土及")]
    text = apply_edits(source, edits)
    assert text == "拜仁都是*垃土及"
    assert invert_edits(text, edits) == source


def test_edits_as_dicts_in_any_order():
    edits = [{"op": "x", "start": 3, "end": 4, "src": "d", "dst": "DD"},
             {"op": "x", "start": 0, "end": 1, "src": "a", "dst": ""}]
    assert apply_edits("abcd", edits) == "bcDD"
    assert invert_edits("bcDD", edits) == "abcd"


def test_edit_that_does_not_fit_is_refused():
    with pytest.raises(EditError, match="expects"):
        apply_edits("abc", [Edit("x", 0, 1, "z", "y")])
    with pytest.raises(EditError, match="overlaps"):
        apply_edits("abc", [Edit("x", 0, 2, "ab", "y"), Edit("x", 1, 2, "b", "y")])
    with pytest.raises(EditError, match="perturbed text"):
        invert_edits("abc", [Edit("x", 0, 1, "a", "Q")])
