"""Train the support checker's combiners and write src/citadel/adapters/support/weights.json.

    .venv/bin/python scripts/train_support.py \
        [--pairs data/support/*.jsonl] [--measure ../shared/data/scifact/support_train.jsonl]

Reads the project's own labelled pairs (``data/support/``: written over the shared
books and their perturbations, the project's licence; label SUPPORT/CONTRADICT/NEI,
positive = SUPPORT), computes every pair's features with the checker's own code
(``citadel.adapters.support.pair_features``), and for each feature set
(``lexical``, ``static``, ``embedder``) fits a standardised, class-balanced
logistic regression. The figures are cross-validated leaving one book out (folds
grouped by ``book``; a file without books is grouped by ``claim_id``): AUROC, and
at the threshold that maximises the out-of-fold balanced accuracy — the shipped
``supported`` threshold — balanced accuracy, precision and recall. ``partial`` is
the out-of-fold score above which 95% of the SUPPORT pairs lie. The weights are
then fitted on all pairs. ``--measure`` files (SciFact, CC BY-NC) are scored by the
fitted weights and reported, never trained on. Deterministic: GroupKFold has no
randomness, lbfgs neither.

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

VERSION = "support/2"
FOLDS = 5
DATA = Path("data/support")
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


def read_pairs(paths: list[Path]) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """(segment, passage) pairs, their gold labels and their groups: the pair's
    ``book``, else (SciFact) its ``claim_id`` prefixed ``claim:``."""
    rows = [
        json.loads(line)
        for path in paths
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]
    pairs = [(r.get("sentence") or r["claim"], r.get("passage") or r["evidence"]) for r in rows]
    labels = np.asarray([r["label"] for r in rows])
    groups = np.asarray([r["book"] if "book" in r else f"claim:{r['claim_id']}" for r in rows])
    return pairs, labels, groups


def support_figures(y: np.ndarray, p: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    figures = {"auroc": round(roc_auc_score(y, p), 4)}
    for other in ("NEI", "CONTRADICT"):
        keep = (labels == "SUPPORT") | (labels == other)
        if len(set(y[keep])) == 2:
            figures[f"auroc_support_vs_{other.lower()}"] = round(roc_auc_score(y[keep], p[keep]), 4)
    return figures


def cross_validate(x: np.ndarray, y: np.ndarray, groups: np.ndarray, labels: np.ndarray) -> dict:
    oof = np.zeros(len(y))
    fold_auc = []
    folds = min(FOLDS, len(set(groups)))
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        scaler, lr = model()
        lr.fit(scaler.fit_transform(x[train]), y[train])
        oof[test] = lr.predict_proba(scaler.transform(x[test]))[:, 1]
        fold_auc.append(roc_auc_score(y[test], oof[test]))
    threshold, ba = best_threshold(y, oof)
    predicted = oof >= threshold
    partial = float(np.quantile(oof[y == 1], 1 - PARTIAL_RECALL))
    return {
        "folds": folds,
        **support_figures(y, oof, labels),
        "auroc_fold_std": round(float(np.std(fold_auc)), 4),
        "balanced_accuracy": round(ba, 4),
        "precision": round(float((y[predicted] == 1).mean()), 4),
        "recall": round(float(predicted[y == 1].mean()), 4),
        "threshold": round(threshold, 4),
        "partial": round(min(partial, threshold), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, nargs="+", default=sorted(DATA.glob("*.jsonl")))
    parser.add_argument(
        "--measure", type=Path, nargs="*", default=[], help="pairs to report, never trained on"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    pairs, labels, groups = read_pairs(args.pairs)
    y = (labels == "SUPPORT").astype(int)
    started = time.perf_counter()
    embedder = MiniLmEmbedder()
    tokens, vectors = StaticTokens(), VectorCache(embedder, size=1 << 20)
    full = pair_features(pairs, tokens=tokens, vectors=vectors)
    print(f"{len(pairs)} pairs, features in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    measured = {}
    for path in args.measure:
        m_pairs, m_labels, _ = read_pairs([path])
        measured[path.name] = (m_labels, pair_features(m_pairs, tokens=tokens, vectors=vectors))
    models = {}
    for kind, names in FEATURES.items():
        x = full[:, : len(names)]
        figures = cross_validate(x, y, groups, labels)
        scaler, lr = model()
        lr.fit(scaler.fit_transform(x), y)
        never_trained = {}
        for name, (m_labels, m_full) in measured.items():
            m_x = scaler.transform(m_full[:, : len(names)])
            m_y = (m_labels == "SUPPORT").astype(int)
            m_p = lr.predict_proba(m_x)[:, 1]
            never_trained[name] = {
                **support_figures(m_y, m_p, m_labels),
                "balanced_accuracy": round(
                    balanced_accuracy_score(m_y, m_p >= figures["threshold"]), 4
                ),
            }
            print(f"{kind:9} {name}: {json.dumps(never_trained[name])}", file=sys.stderr)
        models[kind] = {
            "features": list(names),
            "mean": [round(float(v), 8) for v in scaler.mean_],
            "scale": [round(float(v), 8) for v in scaler.scale_],
            "coef": [round(float(v), 8) for v in lr.coef_[0]],
            "intercept": round(float(lr.intercept_[0]), 8),
            "thresholds": {"supported": figures["threshold"], "partial": figures["partial"]},
            "cv": figures,
            "measured_never_trained": never_trained,
        }
        print(f"{kind:9} {json.dumps(figures)}", file=sys.stderr)
    document = {
        "version": VERSION,
        "trained_on": ", ".join(sorted(p.name for p in args.pairs)) + " (positive = SUPPORT)",
        "grouped_by": "claim_id" if any(g.startswith("claim:") for g in groups) else "book",
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
