"""Retrieval metrics as BEIR computes them: nDCG@k, Recall@k, MRR@k."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]
"""query id → document id → graded relevance (> 0 is relevant)."""

Run = Mapping[str, Sequence[str]]
"""query id → ranked document ids, best first."""


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    gains = [relevant.get(doc, 0) for doc in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    if not wanted:
        return 0.0
    return len(wanted & set(ranked[:k])) / len(wanted)


def mrr_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    for i, doc in enumerate(ranked[:k]):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(run: Run, qrels: Qrels) -> dict[str, float]:
    """Means over the judged queries (a query missing from ``run`` scores 0)."""
    judged = [q for q, rel in qrels.items() if any(g > 0 for g in rel.values())]
    if not judged:
        return {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0, "queries": 0}
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    for query in judged:
        ranked = run.get(query, ())
        relevant = qrels[query]
        totals["ndcg@10"] += ndcg_at(ranked, relevant, 10)
        totals["recall@10"] += recall_at(ranked, relevant, 10)
        totals["recall@100"] += recall_at(ranked, relevant, 100)
        totals["mrr@10"] += mrr_at(ranked, relevant, 10)
    result = {name: value / len(judged) for name, value in totals.items()}
    result["queries"] = float(len(judged))
    return result
