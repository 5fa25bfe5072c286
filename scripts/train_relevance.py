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
import math
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from check_answerability_data import Candidate, gold_chunk
from sklearn.metrics import roc_auc_score
from tokenizers import Tokenizer
from train_support_cross import (
    TOKENIZER,
    encode,
    fit_and_export,
    frozen_states,
    predict,
    train,
)
from train_support_cross_model import export_onnx, quantise

from citadel.domain.text import split_sentences, terms


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str
    book: str
    chapter: str
    ordinal: int
    text: str
    section_path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pair:
    question_id: str
    book: str
    question: str
    passage: str
    label: int
    kind: str = "sentence"
    """What the text is: one sentence or code line of a passage."""
    group: str = "answerable"
    """``answerable``, or the unanswerable question's kind: ``near`` or ``far``."""


class Lexical:
    """The chunks that share the most rare terms with a question: what a lexical search
    would put first, so the hardest negatives a reader would actually be shown."""

    def __init__(self, chunks: dict[str, Chunk]) -> None:
        self._terms = {c.chunk_id: frozenset(terms(c.text)) for c in chunks.values()}
        self._book = {c.chunk_id: c.book for c in chunks.values()}
        df: Counter[str] = Counter(t for ts in self._terms.values() for t in ts)
        self._idf = {t: math.log(1 + len(self._terms) / n) for t, n in df.items()}

    def best_sentences(self, question: str, text: str, k: int, avoid: list[str]) -> list[str]:
        """The ``k`` sentences of ``text`` sharing the most rare terms with ``question``
        that overlap no string of ``avoid``: what a lexical pre-filter would score."""
        wanted = frozenset(terms(question))
        spans = [(text.find(a), text.find(a) + len(a)) for a in avoid if a in text]
        scored = []
        for start, end in split_sentences(text):
            sentence = text[start:end].strip()
            found = frozenset(terms(sentence))
            if len(found) < 3 or any(start < e and s < end for s, e in spans):
                continue
            score = math.fsum(self._idf.get(t, 0.0) for t in wanted & found)
            scored.append((-score, start, sentence))
        scored.sort()
        return [sentence for _, _, sentence in scored[:k]]

    def top(self, question: str, book: str | None, k: int, skip: set[str]) -> list[str]:
        wanted = frozenset(terms(question))
        scored = [
            (-math.fsum(self._idf[t] for t in wanted & ts), chunk_id)
            for chunk_id, ts in self._terms.items()
            if (book is None or self._book[chunk_id] == book) and chunk_id not in skip
        ]
        scored.sort()
        return [chunk_id for score, chunk_id in scored[:k] if score < 0]


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
                tuple(str(p) for p in row.get("section_path") or ()),  # type: ignore[attr-defined]
            )
            chunks[chunk.chunk_id] = chunk
    return chunks


def resolve_gold(items: list[dict[str, object]], chunks: dict[str, Chunk]) -> list[str]:
    """Each item's gold chunk in these dumps: its ``chunk_id`` when present, else the chunk
    of its book that holds every answer string (its own section first).

    Chunk ids hash the source id, which each ingest draws anew, so a fresh home's ids
    differ from the writers'; the text, and so the chunk that holds the answer, does
    not. Items no chunk answers are reported and left out."""
    by_book: dict[str, list[Candidate]] = defaultdict(list)
    for c in chunks.values():
        by_book[c.book].append((c.chunk_id, c.chapter, c.ordinal, c.text, list(c.section_path)))
    found: list[str] = []
    for item in items:
        chunk_id = str(item["chunk_id"])
        if chunk_id in chunks:
            found.append(chunk_id)
            continue
        answers = [str(a) for a in item["answer"]]  # type: ignore[attr-defined]
        path = [str(p) for p in item.get("section_path") or []]  # type: ignore[attr-defined]
        found.append(gold_chunk(answers, path, by_book[str(item["book"])]) or "")
    return found


def answerable_pairs(
    items: list[dict[str, object]], chunks: dict[str, Chunk], lexical: Lexical
) -> list[Pair]:
    """(question, sentence) pairs: the answer strings (1), and the sentences a run-time
    pre-filter would put beside them (0): the gold passage's own other sentences, and
    the best-matching sentences of a neighbouring chunk of its chapter and of the
    book's lexically nearest chunk that does not hold the answer."""
    by_chapter: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
    for chunk in chunks.values():
        by_chapter[(chunk.book, chunk.chapter)].append(chunk)
    pairs: list[Pair] = []
    for item in items:
        gold = chunks[str(item["chunk_id"])]
        qid, question = str(item["id"]), str(item["question"])
        answers = [str(a) for a in item["answer"]]  # type: ignore[attr-defined]

        def unrelated(c: Chunk, gold: Chunk = gold, answers: list[str] = answers) -> bool:
            return c.chunk_id != gold.chunk_id and not any(a in c.text for a in answers)

        pairs.extend(Pair(qid, gold.book, question, a, 1) for a in answers[:2])
        negatives = lexical.best_sentences(question, gold.text, 2, answers)
        near = sorted(
            (c for c in by_chapter[(gold.book, gold.chapter)] if unrelated(c)),
            key=lambda c, gold=gold: (abs(c.ordinal - gold.ordinal), c.ordinal),
        )[:1]
        near += [
            chunks[c]
            for c in lexical.top(question, gold.book, 4, {gold.chunk_id})
            if unrelated(chunks[c]) and chunks[c] not in near
        ][:1]
        for chunk in near:
            negatives += lexical.best_sentences(question, chunk.text, 1, answers)
        pairs.extend(Pair(qid, gold.book, question, n, 0) for n in dict.fromkeys(negatives))
    return pairs


def unanswerable_pairs(
    items: list[dict[str, object]], chunks: dict[str, Chunk], books: list[str], lexical: Lexical
) -> list[Pair]:
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
        # The writer's searched tops when these dumps hold them (ids are per home),
        # else what a lexical search of the near book (or of every book) puts first.
        near = bool(item.get("near_book"))
        chosen = list(dict.fromkeys(found))[:3] or lexical.top(
            question, book if near else None, 3, set()
        )
        group = "near" if near else "far"
        sentences = [
            sentence
            for c in chosen
            for sentence in lexical.best_sentences(question, chunks[c].text, 2, [])
        ]
        pairs.extend(Pair(qid, book, question, t, 0, group=group) for t in dict.fromkeys(sentences))
    return pairs


def load_pairs(data: Path, chunk_dir: Path) -> list[Pair]:
    chunks = load_chunks(chunk_dir)
    answerable = [
        row for path in sorted(data.glob("answerable-*.jsonl")) for row in read_lines(path)
    ]
    gold = resolve_gold(answerable, chunks)
    lost = [str(r["id"]) for r, g in zip(answerable, gold, strict=True) if not g]
    if len(lost) > len(answerable) // 50:
        raise SystemExit(f"{len(lost)} questions have no chunk in {chunk_dir} (e.g. {lost[0]})")
    if lost:
        print(f"left out {len(lost)} questions no chunk answers: {lost[:5]}", file=sys.stderr)
    answerable = [{**r, "chunk_id": g} for r, g in zip(answerable, gold, strict=True) if g]
    books = sorted({str(r["book"]) for r in answerable})
    lexical = Lexical(chunks)
    pairs = answerable_pairs(answerable, chunks, lexical)
    unanswerable = data / "unanswerable.jsonl"
    if unanswerable.is_file():
        pairs += unanswerable_pairs(read_lines(unanswerable), chunks, books, lexical)
    return pairs


def held_out_figures(pairs: list[Pair], scores: np.ndarray, idx: np.ndarray) -> dict[str, float]:
    """Per kind of text (passage, sentence): pair AUROC, and hit@1, the answerable
    questions whose gold text scores above every negative of the same question; and the
    answerability AUROC, a question's best passage score, answerable against not."""
    out: dict[str, float] = {"pairs": len(idx)}
    best: dict[str, tuple[float, int]] = {}
    for kind in ("sentence",):
        chosen = [(i, float(s)) for i, s in zip(idx, scores, strict=True) if pairs[i].kind == kind]
        y = np.asarray([pairs[i].label for i, _ in chosen])
        by_question: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for i, score in chosen:
            by_question[pairs[i].question_id].append((score, pairs[i].label))
        golds = [rows for rows in by_question.values() if any(label for _, label in rows)]
        out[f"{kind}_auroc"] = round(float(roc_auc_score(y, [s for _, s in chosen])), 4)
        out[f"{kind}_hit@1"] = round(sum(max(r)[1] == 1 for r in golds) / max(1, len(golds)), 4)
        if kind == "sentence":
            best = {q: (max(r)[0], int(any(lab for _, lab in r))) for q, r in by_question.items()}
    answerable = [label for _, label in best.values()]
    if 0 < sum(answerable) < len(answerable):
        out["answerability_auroc"] = round(
            float(roc_auc_score(answerable, [score for score, _ in best.values()])), 4
        )
    return out


def export_int8(model: torch.nn.Module, path: Path) -> None:
    """The fold's model as the int8 ONNX graph the run time loads."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    model.eval()
    with tempfile.TemporaryDirectory() as tmp:
        float_path = Path(tmp) / "float.onnx"
        export_onnx(model, float_path)  # type: ignore[arg-type]
        quantise(float_path, path)


def calibrate(oof_path: Path, onnx: Path, answered: float, name: str, max_pieces: int) -> int:
    """Platt scaling of the held-out passage logits, the answerability threshold, and the
    model's metadata file (``onnx`` with ``.json``): what the run-time adapter reads.

    Every logit is out of fold (its book was held out), so the calibration and the
    threshold are fitted on what the scorer does with books it never saw. The threshold
    is the highest at which at least ``answered`` of the answerable questions keep an
    answer, a question's score being its best passage's (as at run time)."""
    from sklearn.linear_model import LogisticRegression

    rows = json.loads(oof_path.read_text("utf-8"))
    passages = [r for r in rows if r["kind"] == "sentence"]
    logits = np.asarray([[r["logit"]] for r in passages])
    labels = np.asarray([r["label"] for r in passages])
    platt = LogisticRegression(C=1e6).fit(logits, labels)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    best: dict[str, list[float | str]] = {}
    for r in passages:
        p = 1 / (1 + math.exp(-(a * r["logit"] + b)))
        q = best.setdefault(r["question_id"], [p, r["group"]])
        q[0] = max(float(q[0]), p)
    scores = {
        g: [float(s) for s, gg in best.values() if gg == g] for g in ("answerable", "near", "far")
    }

    def share(group: str, t: float, above: bool) -> float:
        values = scores[group]
        return sum((v >= t) == above for v in values) / max(1, len(values))

    grid = [round(t, 3) for t in np.arange(0.01, 1.0, 0.01)]
    threshold = max((t for t in grid if share("answerable", t, True) >= answered), default=0.01)
    table = {
        str(t): {
            "answered": round(share("answerable", t, True), 4),
            "near_abstained": round(share("near", t, False), 4),
            "far_abstained": round(share("far", t, False), 4),
        }
        for t in [*grid[4::5], threshold]
    }
    data = onnx.read_bytes()
    meta = {
        "name": name,
        "max_pieces": max_pieces,
        "calibration": {"a": round(a, 6), "b": round(b, 6)},
        "threshold": threshold,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "calibrated_on": f"{len(passages)} held-out sentence pairs, {len(best)} questions",
        "at_threshold": table[str(threshold)],
    }
    onnx.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n", "utf-8")
    print(json.dumps({"meta": meta, "thresholds": table}, indent=1), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["cv", "fit", "calibrate"])
    parser.add_argument("--data", type=Path, default=Path("data/answerability"))
    parser.add_argument("--chunks", type=Path, help="one BOOK.jsonl per book")
    parser.add_argument("--answered", type=float, default=0.97, help="calibrate: share kept")
    parser.add_argument("--name", default="relevance-minilm-l3/1", help="calibrate: model name")
    parser.add_argument("--max-pieces", type=int, default=128, help="pair length cap")
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
    parser.add_argument(
        "--train-share", type=float, default=1.0, help="cv: train on this share of each fold"
    )
    parser.add_argument("--oof", type=Path, help="cv: write each held-out pair's logit here")
    parser.add_argument(
        "--fold-onnx", type=Path, help="cv: write each fold's int8 model here (without-BOOK.onnx)"
    )
    args = parser.parse_args(argv)
    if args.mode == "calibrate":
        if args.oof is None or args.onnx is None:
            parser.error("calibrate needs --oof FILE (from cv) and --onnx MODEL (from fit)")
        return calibrate(args.oof, args.onnx, args.answered, args.name, args.max_pieces)
    if args.chunks is None:
        parser.error("cv and fit need --chunks DIR")
    torch.set_num_threads(args.threads)
    pairs = load_pairs(args.data, args.chunks)
    if args.limit:
        pairs = pairs[: args.limit]
    y = np.asarray([p.label for p in pairs])
    books = sorted({p.book for p in pairs})
    counts = {b: sum(p.book == b for p in pairs) for b in books}
    print(f"{len(pairs)} pairs ({int(y.sum())} positive); per book {counts}", file=sys.stderr)
    tok = Tokenizer.from_file(str(TOKENIZER))
    encoded = encode(tok, [(p.question, p.passage) for p in pairs], args.max_pieces)
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
    held_out: list[dict[str, object]] = []
    for k, book in enumerate(held):
        train_idx, test_idx = np.flatnonzero(book_of != book), np.flatnonzero(book_of == book)
        if args.train_share < 1.0:
            rng = np.random.default_rng(args.seed + k)
            keep = round(len(train_idx) * args.train_share)
            train_idx = np.sort(rng.choice(train_idx, keep, replace=False))
        model = train(encoded, states, y, train_idx, args, args.seed + k, log=f"without {book}")
        scores = predict(model, encoded, states, test_idx, args.layers - args.train_layers)
        if args.fold_onnx is not None:  # to run the whole answer path on the held-out book
            export_int8(model, args.fold_onnx / f"without-{book}.onnx")
        report[book] = held_out_figures(pairs, scores, test_idx)
        print(f"{book}: {json.dumps(report[book])}", file=sys.stderr, flush=True)
        held_out += [
            {
                "question_id": pairs[i].question_id,
                "book": pairs[i].book,
                "label": pairs[i].label,
                "kind": pairs[i].kind,
                "group": pairs[i].group,
                "logit": round(float(score), 5),
            }
            for i, score in zip(test_idx, scores, strict=True)
        ]
        if args.oof is not None:  # after every book: a long run keeps what it measured
            args.oof.write_text(json.dumps(held_out), "utf-8")
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
