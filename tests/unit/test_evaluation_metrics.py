"""The metrics match hand-computed values (BEIR's definitions)."""

from __future__ import annotations

import math

import pytest

from citadel.domain.evaluation import evaluate, mrr_at, ndcg_at, recall_at


def test_ndcg_rewards_relevant_documents_early() -> None:
    relevant = {"a": 1, "b": 1}
    assert ndcg_at(["a", "b", "x"], relevant, 10) == pytest.approx(1.0)
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at(["x", "a", "b"], relevant, 10) == pytest.approx(expected)
    assert ndcg_at(["x", "y"], relevant, 10) == 0.0
    assert ndcg_at(["x"] * 10 + ["a"], relevant, 10) == 0.0  # past the cut-off


def test_graded_relevance_uses_the_grades() -> None:
    assert ndcg_at(["b", "a"], {"a": 2, "b": 1}, 10) < ndcg_at(["a", "b"], {"a": 2, "b": 1}, 10)


def test_recall_and_mrr() -> None:
    relevant = {"a": 1, "b": 1, "c": 1, "d": 0}
    assert recall_at(["a", "x", "b"], relevant, 2) == pytest.approx(1 / 3)
    assert recall_at(["a", "x", "b"], relevant, 10) == pytest.approx(2 / 3)
    assert mrr_at(["x", "y", "b"], relevant, 10) == pytest.approx(1 / 3)
    assert mrr_at(["d", "x"], relevant, 10) == 0.0  # grade 0 is not relevant


def test_evaluate_averages_over_judged_queries_and_missing_runs_score_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    result = evaluate({"q1": ["a"]}, qrels)
    assert result["queries"] == 2  # q3 has no relevant document
    assert result["ndcg@10"] == pytest.approx(0.5)
    assert result["mrr@10"] == pytest.approx(0.5)
