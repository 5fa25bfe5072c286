"""Fine-tune a three-way MiniLM cross-encoder on the project's support pairs (training only).

Issue 28: an entailment scorer (entails / contradicts / neither) for the support check.
The data is ours (``data/support/``: written pairs and their programmatic
perturbations, the project's licence); SciFact only measures (``--scifact``), never
trains. The model, its export and the training loop are the relevance scorer's
(``train_support_cross_model.py``, ``train_support_cross.py``) with three outputs and
class-balanced cross-entropy. The training environment is that script's::

    # leave one book out, for every book in turn; each held-out pair's probabilities
    PYTHONPATH=src .venv-train/bin/python scripts/train_entailment.py cv --oof /tmp/ent.json
    # the run-time thresholds, from those held-out probabilities (--cut N: those
    # predicted at N word pieces, when cv ran with --predict-pieces N)
    PYTHONPATH=src .venv-train/bin/python scripts/train_entailment.py thresholds --oof /tmp/ent.json
    # the logistic layer over held-out probabilities and lexical features, and the
    # thresholds on its cross-fitted output (entailment.json's stack and thresholds)
    PYTHONPATH=src .venv-train/bin/python scripts/train_entailment.py stack \\
        --oof /tmp/ent-git.json --oof /tmp/ent-r.json --cut 128 --out /tmp/stack.json
    # train on every book and write the int8 ONNX graph (output: three logits)
    PYTHONPATH=src .venv-train/bin/python scripts/train_entailment.py fit --onnx /tmp/ent.onnx

The evidence of a pair is what the run-time checker passes: the passage's
``SENTENCES`` sentences that share the most content words with the sentence
(``features_and_sentences``), so a long chunk and a one-sentence passage look alike.
Classes: 0 SUPPORT (entails), 1 CONTRADICT, 2 NEI. Seeds are fixed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from tokenizers import Tokenizer
from train_support_cross import TOKENIZER, encode, fit_and_export, frozen_states, predict, train

from citadel.domain.support_features import features_and_sentences

LABELS = ("SUPPORT", "CONTRADICT", "NEI")
SENTENCES = 3


def evidence(sentence: str, passage: str) -> str:
    _, chosen = features_and_sentences(sentence, passage, SENTENCES)
    return " ".join(chosen) or passage


def read_rows(paths: list[Path]) -> list[dict[str, str]]:
    return [
        json.loads(line)
        for path in paths
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def figures(labels: np.ndarray, probs: np.ndarray) -> dict[str, float]:
    """Three-way balanced accuracy (argmax), and the ranking of P(entails): supported
    against everything else, against contradicted alone and against neither alone."""
    entail = probs[:, 0]
    out = {
        "pairs": len(labels),
        "balanced_accuracy_3way": round(float(balanced_accuracy_score(labels, probs.argmax(1))), 4),
        "balanced_accuracy_supported": round(
            float(balanced_accuracy_score(labels == 0, probs.argmax(1) == 0)), 4
        ),
        "auroc_supported": round(float(roc_auc_score(labels == 0, entail)), 4),
    }
    for k, name in ((1, "contradicted"), (2, "nei")):
        keep = (labels == 0) | (labels == k)
        if len(set(labels[keep])) == 2:
            out[f"auroc_supported_vs_{name}"] = round(
                float(roc_auc_score(labels[keep] == 0, entail[keep])), 4
            )
    keep = labels == 1
    if keep.any():  # how often a contradiction is called one
        out["contradicted_recall"] = round(float((probs[keep].argmax(1) == 1).mean()), 4)
    return out


def choose_thresholds(labels: np.ndarray, probs: np.ndarray) -> dict[str, float]:
    """The run-time checker's thresholds from held-out probabilities: ``supported`` on
    P(entails) maximises the balanced accuracy of supported against the rest;
    ``partial`` is the point below it keeping 90% of the supported pairs above it;
    ``contradicted`` on P(contradicts), among pairs whose most probable class it is,
    maximises the balanced accuracy of contradicted against the rest."""
    grid = np.round(np.arange(0.05, 0.96, 0.01), 2)
    entail, contra = probs[:, 0], probs[:, 1]
    is_support, is_contra = labels == 0, labels == 1

    def best(pos: np.ndarray, score: np.ndarray, gate: np.ndarray) -> float:
        found = [(float(balanced_accuracy_score(pos, gate & (score >= t))), float(t)) for t in grid]
        return max(found)[1]

    supported = best(is_support, entail, np.ones_like(is_support))
    partial = min(supported, float(np.quantile(entail[is_support], 0.10)))
    contradicted = best(is_contra, contra, probs.argmax(1) == 1)
    return {
        "supported": supported,
        "partial": round(partial, 3),
        "contradicted": contradicted,
    }


def thresholds_report(oof: Path, cut: int | None = None) -> int:
    """Thresholds and the figures they give, from ``cv --oof``'s held-out probabilities
    (those predicted at ``cut`` word pieces when given: ``cv --predict-pieces``)."""
    rows = json.loads(oof.read_text("utf-8"))
    labels = np.asarray([r["label"] for r in rows])
    probs = np.asarray([r["probs"] if cut is None else r["probs_at"][str(cut)] for r in rows])
    chosen = choose_thresholds(labels, probs)
    supported = probs[:, 0] >= chosen["supported"]
    contradicted = (probs.argmax(1) == 1) & (probs[:, 1] >= chosen["contradicted"])
    out = {
        "thresholds": chosen,
        "pairs": len(rows),
        "books": sorted({r["book"] for r in rows}),
        **figures(labels, probs),
        "balanced_accuracy_supported_at_threshold": round(
            float(balanced_accuracy_score(labels == 0, supported & ~contradicted)), 4
        ),
        "balanced_accuracy_contradicted_at_threshold": round(
            float(balanced_accuracy_score(labels == 1, contradicted)), 4
        ),
    }
    print(json.dumps(out, indent=2))
    return 0


STACK_INPUTS = (
    "log_entails",
    "log_contradicts",
    "log_neither",
    "numbers_missing",
    "negation_mismatch",
    "direction_conflict",
    "identifiers_missing",
    "antonym_conflict",
)
"""The layer's default inputs: the model's view, and only the signs that the segment
and the passage disagree (coverage and sizes cost SciFact more than they give
technical pairs: docs/support.md)."""


def stack_report(
    oofs: list[Path], data: Path, cut: int | None, out: Path | None, names: tuple[str, ...]
) -> int:
    """The logistic layer over held-out probabilities and the lexical features
    (``adapters/support/stack.py``), measured book by book and then fitted on all.

    Every row of ``cv --oof`` was predicted by a model that never saw its book. Each
    book's stacked figures come from a layer fitted on the other books' rows only;
    the thresholds are chosen on those cross-fitted probabilities; the layer written
    to ``--out`` (with the thresholds) is fitted on every row.
    """
    from sklearn.linear_model import LogisticRegression

    from citadel.adapters.support.stack import INPUTS, inputs
    from citadel.domain.support_contrast import contrast_features

    source = {r["id"]: r for r in read_rows(sorted(data.glob("*.jsonl")))}
    rows = [r for path in oofs for r in json.loads(path.read_text("utf-8"))]
    labels = np.asarray([r["label"] for r in rows])
    books = np.asarray([r["book"] for r in rows])
    probs = np.asarray([r["probs"] if cut is None else r["probs_at"][str(cut)] for r in rows])
    pairs = [(source[r["id"]]["sentence"], source[r["id"]]["passage"]) for r in rows]
    x = np.asarray(
        [
            inputs(
                p, features_and_sentences(s, passage, SENTENCES)[0], contrast_features(s, passage)
            )
            for p, (s, passage) in zip(probs, pairs, strict=True)
        ]
    )[:, [INPUTS.index(name) for name in names]]

    def fitted(idx: np.ndarray) -> tuple[LogisticRegression, np.ndarray, np.ndarray]:
        mean, scale = x[idx].mean(0), x[idx].std(0)
        scale[scale == 0] = 1.0
        layer = LogisticRegression(C=1.0, max_iter=5000, class_weight="balanced")
        return layer.fit((x[idx] - mean) / scale, labels[idx]), mean, scale

    crossed = np.zeros_like(probs)
    report: dict[str, object] = {}
    for book in sorted(set(books)):
        test = books == book
        if len(set(books)) > 1:
            layer, mean, scale = fitted(np.flatnonzero(~test))
            crossed[test] = layer.predict_proba((x[test] - mean) / scale)
        report[book] = {
            "model": figures(labels[test], probs[test]),
            "stacked": figures(labels[test], crossed[test]) if len(set(books)) > 1 else None,
        }
    chosen = choose_thresholds(labels, crossed)
    layer, mean, scale = fitted(np.arange(len(rows)))
    document = {
        "stack": {
            "inputs": list(names),
            "mean": [round(float(v), 6) for v in mean],
            "scale": [round(float(v), 6) for v in scale],
            "coef": [[round(float(v), 6) for v in c] for c in layer.coef_],
            "intercept": [round(float(v), 6) for v in layer.intercept_],
        },
        "thresholds": chosen,
        "figures": report,
        "rows": len(rows),
        "cut": cut,
    }
    if out is not None:
        out.write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    print(json.dumps({k: v for k, v in document.items() if k != "stack"}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["cv", "fit", "thresholds", "stack"])
    parser.add_argument("--data", type=Path, default=Path("data/support"))
    parser.add_argument("--scifact", type=Path, help="also report these SciFact pairs")
    parser.add_argument("--books", default="", help="cv: only these held-out books (a,b)")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-layers", type=int, default=2, help="top layers fine-tuned")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--max-pieces", type=int, default=256)
    parser.add_argument(
        "--predict-pieces",
        default="",
        help="cv: also predict the held-out pairs cut at these lengths (a,b), as run time "
        "cuts them (entailment.json's max_pieces); written as probs_at in --oof",
    )
    parser.add_argument(
        "--cut", type=int, help="thresholds: use the probabilities predicted at this cut"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--onnx", type=Path, help="fit: write the int8 ONNX model here")
    parser.add_argument(
        "--oof",
        type=Path,
        action="append",
        help="cv: write each held-out pair's probabilities here; thresholds: read them; "
        "stack: read them (repeat for several cv runs)",
    )
    parser.add_argument("--out", type=Path, help="stack: write the layer and thresholds here")
    parser.add_argument("--inputs", help="stack: what the layer reads (a,b; default STACK_INPUTS)")
    args = parser.parse_args(argv)
    if args.mode == "thresholds":
        if args.oof is None or len(args.oof) != 1:
            parser.error("thresholds needs one --oof FILE (written by cv)")
        return thresholds_report(args.oof[0], args.cut)
    if args.mode == "stack":
        if args.oof is None:
            parser.error("stack needs --oof FILE (written by cv), once per cv run")
        names = tuple(args.inputs.split(",")) if args.inputs else STACK_INPUTS
        return stack_report(args.oof, args.data, args.cut, args.out, names)
    if args.oof is not None and len(args.oof) != 1:
        parser.error("cv writes one --oof FILE")
    oof_path = args.oof[0] if args.oof else None
    args.outputs = len(LABELS)
    torch.set_num_threads(args.threads)
    rows = read_rows(sorted(args.data.glob("*.jsonl")))
    y = np.asarray([LABELS.index(r["label"]) for r in rows])
    books = np.asarray([r["book"] for r in rows])
    pairs = [(r["sentence"], evidence(r["sentence"], r["passage"])) for r in rows]
    extra: list[dict[str, str]] = []
    if args.scifact is not None:  # measured, never trained on: appended after the split
        extra = read_rows([args.scifact])
        pairs += [(r["claim"], evidence(r["claim"], r["evidence"])) for r in extra]
    counts = {b: int((books == b).sum()) for b in sorted(set(books))}
    print(f"{len(rows)} pairs; per book {counts}; {len(extra)} SciFact", file=sys.stderr)
    encoded = encode(Tokenizer.from_file(str(TOKENIZER)), pairs, args.max_pieces)
    started = time.perf_counter()
    states = frozen_states(encoded, args.layers, args.layers - args.train_layers)
    print(f"frozen states in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    cuts = [int(c) for c in args.predict_pieces.split(",") if c]
    recut = {c: encode(Tokenizer.from_file(str(TOKENIZER)), pairs, c) for c in cuts}
    recut_states = {
        c: frozen_states(e, args.layers, args.layers - args.train_layers) for c, e in recut.items()
    }
    ours = np.arange(len(rows))
    if args.mode == "fit":
        if args.onnx is None:
            parser.error("fit needs --onnx PATH")
        return fit_and_export(encoded[: len(rows)], states[: len(rows)], y, args)
    start = args.layers - args.train_layers
    report: dict[str, dict[str, float]] = {}
    held_out: list[dict[str, object]] = []
    scifact = np.arange(len(rows), len(pairs))
    scifact_probs = []
    for k, book in enumerate([b for b in args.books.split(",") if b] or sorted(counts)):
        train_idx, test_idx = ours[books != book], ours[books == book]
        model = train(encoded, states, y, train_idx, args, args.seed + k, log=f"without {book}")
        probs = softmax(predict(model, encoded, states, test_idx, start))
        report[book] = figures(y[test_idx], probs)
        for kind in sorted({rows[i]["kind"] for i in test_idx}):
            pick = np.asarray([rows[i]["kind"] == kind for i in test_idx])
            report[book][f"kind:{kind}:argmax_correct"] = round(
                float((probs[pick].argmax(1) == y[test_idx][pick]).mean()), 4
            )
        at = {c: softmax(predict(model, recut[c], recut_states[c], test_idx, start)) for c in cuts}
        for c, cut_probs in at.items():
            report[book][f"cut:{c}"] = figures(y[test_idx], cut_probs)  # type: ignore[assignment]
        print(f"{book}: {json.dumps(report[book])}", file=sys.stderr, flush=True)
        held_out += [
            {
                "id": rows[i]["id"],
                "book": book,
                "label": int(y[i]),
                "kind": rows[i]["kind"],
                "origin": rows[i]["origin"],
                "probs": [round(float(p), 5) for p in row],
                "probs_at": {str(c): [round(float(p), 5) for p in at[c][j]] for c in cuts},
            }
            for j, (i, row) in enumerate(zip(test_idx, probs, strict=True))
        ]
        if len(scifact):
            scifact_probs.append(softmax(predict(model, encoded, states, scifact, start)))
        if oof_path is not None:
            oof_path.write_text(json.dumps(held_out), "utf-8")
    if scifact_probs:  # the average of the fold models, on pairs none of them saw
        sy = np.asarray([LABELS.index(r["label"]) for r in extra])
        report["scifact"] = figures(sy, np.mean(scifact_probs, axis=0))
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
