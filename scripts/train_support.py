"""Train the support checker's combiners and write src/citadel/adapters/support/weights.json.

    .venv/bin/python scripts/train_support.py [--pairs ../shared/data/scifact/support_train.jsonl]

Reads SciFact's sentence pairs (claim, evidence, label SUPPORT/CONTRADICT/NEI;
positive = SUPPORT), computes every pair's features with the checker's own code
(``citadel.adapters.support.pair_features``), and for each feature set
(``lexical``, ``static``, ``embedder``) fits a standardised, class-balanced
logistic regression. The figures are 5-fold cross-validated with folds grouped
by ``claim_id`` (no claim in both train and test): AUROC, and at the threshold
that maximises the out-of-fold balanced accuracy — the shipped ``supported``
threshold — balanced accuracy, precision and recall. ``partial`` is the
out-of-fold score above which 95% of the SUPPORT pairs lie. The weights are then
fitted on all pairs. Deterministic: GroupKFold has no randomness, lbfgs neither.

Needs scikit-learn (``pip install -e '.[train]'``); the run time needs numpy only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.preprocessing import StandardScaler

from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.support import FEATURES, StaticTokens, VectorCache, pair_features

VERSION = "support/1"
FOLDS = 5
C = 1.0
PARTIAL_RECALL = 0.95
OUT = Path("src/citadel/adapters/support/weights.json")


def best_threshold(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """The score threshold with the highest balanced accuracy (ties: the lowest one)."""
    best = (-1.0, 0.5)
    for t in np.unique(np.round(p, 4)):
        ba = balanced_accuracy_score(y, p >= t)
        if ba > best[0] + 1e-12:
            best = (float(ba), float(t))
    return best[1], best[0]


def model() -> tuple[StandardScaler, LogisticRegression]:
    return StandardScaler(), LogisticRegression(
        C=C, class_weight="balanced", max_iter=5000, solver="lbfgs"
    )


def cross_validate(x: np.ndarray, y: np.ndarray, groups: np.ndarray, labels: np.ndarray) -> dict:
    oof = np.zeros(len(y))
    fold_auc = []
    for train, test in GroupKFold(n_splits=FOLDS).split(x, y, groups):
        scaler, lr = model()
        lr.fit(scaler.fit_transform(x[train]), y[train])
        oof[test] = lr.predict_proba(scaler.transform(x[test]))[:, 1]
        fold_auc.append(roc_auc_score(y[test], oof[test]))
    threshold, ba = best_threshold(y, oof)
    predicted = oof >= threshold
    partial = float(np.quantile(oof[y == 1], 1 - PARTIAL_RECALL))
    by_other = {}
    for other in ("NEI", "CONTRADICT"):
        keep = (labels == "SUPPORT") | (labels == other)
        by_other[f"auroc_support_vs_{other.lower()}"] = round(roc_auc_score(y[keep], oof[keep]), 4)
    return {
        "folds": FOLDS,
        "grouped_by": "claim_id",
        "auroc": round(roc_auc_score(y, oof), 4),
        "auroc_fold_std": round(float(np.std(fold_auc)), 4),
        "balanced_accuracy": round(ba, 4),
        "precision": round(float((y[predicted] == 1).mean()), 4),
        "recall": round(float(predicted[y == 1].mean()), 4),
        **by_other,
        "threshold": round(threshold, 4),
        "partial": round(min(partial, threshold), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--pairs", type=Path, default=Path("../shared/data/scifact/support_train.jsonl")
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.pairs.read_text("utf-8").splitlines() if line.strip()]
    pairs = [(r["claim"], r["evidence"]) for r in rows]
    labels = np.asarray([r["label"] for r in rows])
    y = (labels == "SUPPORT").astype(int)
    groups = np.asarray([str(r["claim_id"]) for r in rows])
    started = time.perf_counter()
    embedder = MiniLmEmbedder()
    full = pair_features(pairs, tokens=StaticTokens(), vectors=VectorCache(embedder, size=1 << 20))
    print(f"{len(pairs)} pairs, features in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    models = {}
    for kind, names in FEATURES.items():
        x = full[:, : len(names)]
        figures = cross_validate(x, y, groups, labels)
        scaler, lr = model()
        lr.fit(scaler.fit_transform(x), y)
        models[kind] = {
            "features": list(names),
            "mean": [round(float(v), 8) for v in scaler.mean_],
            "scale": [round(float(v), 8) for v in scaler.scale_],
            "coef": [round(float(v), 8) for v in lr.coef_[0]],
            "intercept": round(float(lr.intercept_[0]), 8),
            "thresholds": {"supported": figures["threshold"], "partial": figures["partial"]},
            "cv": figures,
        }
        print(f"{kind:9} {json.dumps(figures)}", file=sys.stderr)
    document = {
        "version": VERSION,
        "trained_on": "SciFact support_train.jsonl (positive = SUPPORT)",
        "pairs": len(pairs),
        "embedder": embedder.name,
        "model": f"StandardScaler + LogisticRegression(C={C}, class_weight=balanced)",
        "models": models,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
