"""The attacks on victims: embedding-space FGM / PGD, and the figures every attack is scored by."""
from __future__ import annotations

import numpy as np
import pytest

from attacks import make_victim
from attacks.metrics import detection_metrics, drops
from cloak.params import ParameterError

from .conftest import read_jsonl


@pytest.fixture(scope="module")
def posts(sample_path):
    rows = read_jsonl(sample_path)
    return rows[:160], rows[160:200], rows[200:260]


@pytest.fixture(scope="module")
def tiny_bert(posts, backbone):
    """A tiny BERT victim trained for two epochs: it fits its training posts, so there is something to attack."""
    train, dev, _ = posts
    victim = make_victim("bert", {"backbone": backbone, "max_length": 48},
                         {"epochs": 2, "lr": 1e-3, "batch_size": 16, "patience": 2})
    return victim.fit(train, dev, progress=False)


def texts_labels(rows):
    return [r["text"] for r in rows], np.array([r["label"] for r in rows])


# ---- metrics ----

def test_detection_metrics_give_every_figure():
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    p1 = np.array([0.1, 0.2, 0.3, 0.6, 0.4, 0.7, 0.8, 0.9])
    figures = detection_metrics(labels, np.stack([1 - p1, p1], 1))
    assert figures["accuracy"] == 0.75 and figures["f1"] == pytest.approx(0.75)
    assert figures["auc"] == pytest.approx(15 / 16)  # 15 of the 16 (clean, offensive) pairs ranked right
    # letting through no more than 5% of 4 offensive posts means catching all: threshold 0.4 flags 1 clean
    assert figures["fpr_at_5_fnr"] == pytest.approx(0.25)
    # flagging no more than 5% of 4 clean posts means none: a threshold above 0.6 misses 0.4, 1 of 4
    assert figures["fnr_at_5_fpr"] == pytest.approx(0.25)
    worse = detection_metrics(labels, np.stack([p1, 1 - p1], 1))
    moved = drops(figures, worse)
    assert moved["f1"] > 0 and moved["auc"] > 0 and moved["fpr_at_5_fnr"] > 0


def test_unanswered_rows_count_as_wrong_and_leave_the_ranking():
    labels = np.array([0, 1, 0, 1])
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [np.nan, np.nan], [0.7, 0.3]])
    figures = detection_metrics(labels, probs)
    assert figures["unanswered"] == 1 and figures["accuracy"] == 0.5
    assert figures["auc"] == pytest.approx(1.0)  # over the three answered rows
    with pytest.raises(ValueError, match="probs must be"):
        detection_metrics(labels, probs[:3])


# ---- FGM / PGD ----

def test_fgm_at_eps_zero_is_the_clean_prediction(tiny_bert, posts):
    from attacks.fgm import fgm, pgd

    texts, labels = texts_labels(posts[2])
    clean = tiny_bert.predict_proba(texts)
    np.testing.assert_allclose(fgm(tiny_bert, texts, labels, eps=0), clean, atol=1e-6)
    np.testing.assert_allclose(pgd(tiny_bert, texts, labels, eps=0), clean, atol=1e-6)


def test_accuracy_falls_with_eps_and_pgd_is_at_least_as_strong(tiny_bert, posts):
    from attacks.fgm import fgm, pgd

    texts, labels = texts_labels(posts[0])  # posts it fits, so the clean accuracy is high
    accuracy = {}
    for eps in (0.0, 0.05, 0.2, 0.5, 1.0):
        under_fgm, under_pgd = fgm(tiny_bert, texts, labels, eps), pgd(tiny_bert, texts, labels, eps, steps=5)
        accuracy[eps] = ((under_fgm.argmax(1) == labels).mean(), (under_pgd.argmax(1) == labels).mean())
        gold_fgm, gold_pgd = under_fgm[np.arange(len(labels)), labels], under_pgd[np.arange(len(labels)), labels]
        assert accuracy[eps][1] <= accuracy[eps][0]
        assert (gold_pgd <= gold_fgm + 1e-6).mean() > 0.9  # PGD's strongest iterate, from the FGM point
    fgm_accuracy = [a for a, _ in accuracy.values()]
    assert all(b <= a for a, b in zip(fgm_accuracy, fgm_accuracy[1:])), accuracy
    assert fgm_accuracy[-1] < fgm_accuracy[0] - 0.2, accuracy  # the attack bites


def test_each_example_gets_its_own_bounded_delta(tiny_bert, posts, monkeypatch):
    import torch

    from attacks.fgm import EmbeddingAttack

    texts, labels = texts_labels(posts[2][:6])
    seen = []
    original = type(tiny_bert).logits

    def spy(self, embedded):
        seen.append(embedded)
        return original(self, embedded)

    monkeypatch.setattr(type(tiny_bert), "logits", spy)
    EmbeddingAttack(eps=0.3, steps=4).attack(tiny_bert, texts, labels)
    clean = seen[0].embeds.detach()
    for embedded in seen[1:]:
        delta = (embedded.embeds.detach() - clean)
        norms = delta.flatten(1).norm(dim=1)
        assert (norms <= 0.3 + 1e-5).all() and (norms > 0).all()
        assert torch.equal(delta[embedded.mask == 0], torch.zeros_like(delta[embedded.mask == 0]))  # padding


def test_embedding_attacks_refuse_what_they_cannot_do(tiny_bert, posts):
    from attacks.fgm import EmbeddingAttack, NotDifferentiable

    texts, labels = texts_labels(posts[2])
    victim = make_victim("tfidf-lr").fit(posts[0])
    with pytest.raises(NotDifferentiable, match="tfidf-lr has no input embeddings"):
        EmbeddingAttack(eps=1).attack(victim, texts, labels)
    with pytest.raises(ParameterError, match="'eps' must be"):
        EmbeddingAttack(eps=-1)
    with pytest.raises(ValueError, match="60 texts but 3 labels"):
        EmbeddingAttack(eps=1).attack(tiny_bert, texts, labels[:3])
