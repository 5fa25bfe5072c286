"""Fine-tune a small MiniLM cross-encoder on the project's question-passage data (training only).

Issue 27: a learned question-passage scorer for answerability, sentence choice and
evidence order. The data is ours (``data/answerability/``, the project's licence; no
SciFact); the model and the export are ``train_support_cross_model.py``'s, and the
training loop is ``train_support_cross.py``'s, so the two scorers share one machinery.
The training environment is that script's (``.venv-train``, torch on the CPU)::

    # the books' chunks as citadel cuts them, one file per book (book name + .jsonl):
    citadel sources chunks SOURCE_ID --json > CHUNKS/r-intro.jsonl     # and so on
    # leave one book out, for every book in turn: pair AUROC and hit@1 per held-out book
    PYTHONPATH=src .venv-train/bin/python scripts/train_relevance.py cv --chunks CHUNKS
    # train on every book and write the int8 ONNX graph
    PYTHONPATH=src .venv-train/bin/python scripts/train_relevance.py fit --chunks CHUNKS \\
        --onnx /tmp/relevance.onnx

Pairs (question, passage), the passage a chunk's text as search returns it:

- each answerable question with its gold chunk (label 1);
- hard negatives (label 0): the ``--negatives`` chunks of the same chapter nearest the
  gold one, and one chunk of another chapter of the same book, never a chunk that
  holds one of the question's answer strings;
- each unanswerable question with the top passages its writer's search check found
  (near ones) or with chunks drawn from the whole library (far ones), label 0.

Splits are by book: an unanswerable near question belongs to the book whose words it
shares (``near_book``); far questions are spread over the books by a hash of their id.
Seeds are fixed; the same data and arguments give the same figures and weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from tokenizers import Tokenizer
from train_support_cross import TOKENIZER, encode, fit_and_export, frozen_states, predict, train


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str
    book: str
    chapter: str
    ordinal: int
    text: str


@dataclass(frozen=True, slots=True)
class Pair:
    question_id: str
    book: str
    question: str
    passage: str
    label: int


def stable(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def read_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def load_chunks(directory: Path) -> dict[str, Chunk]:
    chunks: dict[str, Chunk] = {}
    for path in sorted(directory.glob("*.jsonl")):
        for row in read_lines(path):
            chunk = Chunk(
                str(row["chunk_id"]),
                path.stem,
                str(row["chapter"]),
                int(row["ordinal"]),
                str(row["text"]),  # type: ignore[call-overload]
            )
            chunks[chunk.chunk_id] = chunk
    return chunks


def answerable_pairs(
    items: list[dict[str, object]], chunks: dict[str, Chunk], negatives: int
) -> list[Pair]:
    by_chapter: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
    by_book: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks.values():
        by_chapter[(chunk.book, chunk.chapter)].append(chunk)
        by_book[chunk.book].append(chunk)
    pairs: list[Pair] = []
    for item in items:
        gold = chunks[str(item["chunk_id"])]
        qid, question = str(item["id"]), str(item["question"])
        answers = [str(a) for a in item["answer"]]  # type: ignore[attr-defined]
        pairs.append(Pair(qid, gold.book, question, gold.text, 1))

        def unrelated(c: Chunk, gold: Chunk = gold, answers: list[str] = answers) -> bool:
            return c.chunk_id != gold.chunk_id and not any(a in c.text for a in answers)

        near = sorted(
            (c for c in by_chapter[(gold.book, gold.chapter)] if unrelated(c)),
            key=lambda c, gold=gold: (abs(c.ordinal - gold.ordinal), c.ordinal),
        )[:negatives]
        others = [c for c in by_book[gold.book] if c.chapter != gold.chapter and unrelated(c)]
        if others:
            near.append(others[stable(qid) % len(others)])
        pairs.extend(Pair(qid, gold.book, question, c.text, 0) for c in near)
    return pairs


def unanswerable_pairs(
    items: list[dict[str, object]], chunks: dict[str, Chunk], books: list[str]
) -> list[Pair]:
    everything = sorted(chunks)
    pairs: list[Pair] = []
    for item in items:
        qid, question = str(item["id"]), str(item["question"])
        book = str(item["near_book"]) if item.get("near_book") else books[stable(qid) % len(books)]
        found = [
            chunk_id
            for check in item.get("checked") or []  # type: ignore[attr-defined]
            for chunk_id in check["top"]
            if chunk_id in chunks
        ]
        chosen = list(dict.fromkeys(found))[:3] or [
            everything[(stable(qid) + k * 7919) % len(everything)] for k in range(2)
        ]
        pairs.extend(Pair(qid, book, question, chunks[c].text, 0) for c in chosen)
    return pairs


def load_pairs(data: Path, chunk_dir: Path, negatives: int) -> list[Pair]:
    chunks = load_chunks(chunk_dir)
    answerable = [
        row for path in sorted(data.glob("answerable-*.jsonl")) for row in read_lines(path)
    ]
    missing = {str(r["chunk_id"]) for r in answerable} - set(chunks)
    if missing:
        raise SystemExit(f"{len(missing)} gold chunks are not in {chunk_dir} (e.g. {min(missing)})")
    books = sorted({str(r["book"]) for r in answerable})
    pairs = answerable_pairs(answerable, chunks, negatives)
    unanswerable = data / "unanswerable.jsonl"
    if unanswerable.is_file():
        pairs += unanswerable_pairs(read_lines(unanswerable), chunks, books)
    return pairs


def held_out_figures(pairs: list[Pair], scores: np.ndarray, idx: np.ndarray) -> dict[str, float]:
    """Pair AUROC, and hit@1: the answerable questions whose gold passage scores above
    every negative of the same question."""
    y = np.asarray([pairs[i].label for i in idx])
    by_question: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for i, score in zip(idx, scores, strict=True):
        by_question[pairs[i].question_id].append((float(score), pairs[i].label))
    golds = [rows for rows in by_question.values() if any(label for _, label in rows)]
    hits = sum(max(rows)[1] == 1 for rows in golds)
    return {
        "pairs": len(idx),
        "auroc": round(float(roc_auc_score(y, scores)), 4),
        "hit@1": round(hits / max(1, len(golds)), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["cv", "fit"])
    parser.add_argument("--data", type=Path, default=Path("data/answerability"))
    parser.add_argument("--chunks", type=Path, required=True, help="one BOOK.jsonl per book")
    parser.add_argument("--negatives", type=int, default=2, help="same-chapter negatives")
    parser.add_argument("--books", default="", help="cv: only these held-out books (a,b)")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N pairs")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--train-layers", type=int, default=2, help="top layers fine-tuned")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--onnx", type=Path, help="fit: write the int8 ONNX model here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = load_pairs(args.data, args.chunks, args.negatives)
    if args.limit:
        pairs = pairs[: args.limit]
    y = np.asarray([p.label for p in pairs])
    books = sorted({p.book for p in pairs})
    counts = {b: sum(p.book == b for p in pairs) for b in books}
    print(f"{len(pairs)} pairs ({int(y.sum())} positive); per book {counts}", file=sys.stderr)
    encoded = encode(Tokenizer.from_file(str(TOKENIZER)), [(p.question, p.passage) for p in pairs])
    started = time.perf_counter()
    states = frozen_states(encoded, args.layers, args.layers - args.train_layers)
    print(f"frozen states in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    if args.mode == "fit":
        if args.onnx is None:
            parser.error("fit needs --onnx PATH")
        return fit_and_export(encoded, states, y, args)
    held = [b for b in args.books.split(",") if b] or books
    book_of = np.asarray([p.book for p in pairs])
    report = {}
    for k, book in enumerate(held):
        train_idx, test_idx = np.flatnonzero(book_of != book), np.flatnonzero(book_of == book)
        model = train(encoded, states, y, train_idx, args, args.seed + k, log=f"without {book}")
        scores = predict(model, encoded, states, test_idx, args.layers - args.train_layers)
        report[book] = held_out_figures(pairs, scores, test_idx)
        print(f"{book}: {json.dumps(report[book])}", file=sys.stderr, flush=True)
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
