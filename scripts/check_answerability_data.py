"""Check files of answerable questions written over the books (JSON Lines).

Usage: python scripts/check_answerability_data.py FILE... --chunks DIR [--negatives K]

Each line: {"id", "book", "chunk_id", "section_path", "kind", "question", "answer",
"partial"}. The chunk must exist in DIR/<book>.jsonl with the same section_path, every
answer string must occur verbatim in that chunk's text, and the question must not be a
substring of it. Chunk ids hash the source id, which each ingest draws anew: an item whose
chunk_id DIR does not hold is checked against the chunk of its book that holds every
answer string, its own section first (as ``scripts/train_relevance.py``'s
``resolve_gold`` finds it for training). Ids and (case- and space-folded) questions must
be unique. Prints counts per book and kind; exits 1 on any error.

With --negatives K, also prints for every item K hard-negative chunk ids: other chunks of
the same chapter that do not contain any of the item's answer strings (chunks overlap), in
a deterministic order (seeded by the item id); fewer than K when the chapter is small.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

FIELDS = (
    "id",
    "book",
    "chunk_id",
    "section_path",
    "kind",
    "question",
    "answer",
    "partial",
)
KINDS = ("how-to", "why", "what-is", "comparison", "troubleshooting")


def fold(text: str) -> str:
    """Case- and space-folded form of a text, for duplicate detection."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def load_chunks(directory: Path, book: str, cache: dict) -> dict | None:
    """Chunks of one book by chunk_id, or None when the book's file is missing."""
    if book not in cache:
        path = directory / f"{book}.jsonl"
        if not path.is_file():
            cache[book] = None
        else:
            chunks = {}
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        chunk = json.loads(line)
                        chunks[chunk["chunk_id"]] = chunk
            cache[book] = chunks
    return cache[book]


def check_item(where: str, item: object, chunks_dir: Path, cache: dict) -> list[str]:
    """Errors of one item, without the cross-item checks."""
    if not isinstance(item, dict):
        return [f"{where}: not a JSON object"]
    if set(item) != set(FIELDS):
        return [f"{where}: fields must be exactly {FIELDS}, got {sorted(item)}"]
    errors: list[str] = []
    for name in ("id", "book", "chunk_id", "kind", "question"):
        if not isinstance(item[name], str) or not item[name].strip():
            errors.append(f"{where}: {name} must be a non-empty string")
    if not isinstance(item["partial"], bool):
        errors.append(f"{where}: partial must be true or false")
    path = item["section_path"]
    if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
        errors.append(f"{where}: section_path must be a list of strings")
    answer = item["answer"]
    if (
        not isinstance(answer, list)
        or not answer
        or not all(isinstance(a, str) and a.strip() for a in answer)
    ):
        errors.append(f"{where}: answer must be a non-empty list of non-empty strings")
        answer = []
    if errors:
        return errors
    if item["kind"] not in KINDS:
        errors.append(f"{where}: kind {item['kind']!r} not one of {KINDS}")
    if not item["id"].startswith(item["book"] + "-"):
        errors.append(f"{where}: id {item['id']!r} does not start with the book name")
    chunks = load_chunks(chunks_dir, item["book"], cache)
    if chunks is None:
        return [*errors, f"{where}: no chunk file for book {item['book']!r}"]
    chunk_id = resolve(item, chunks)
    if chunk_id is None:
        return [*errors, f"{where}: no chunk of {item['book']} holds every answer string"]
    chunk = chunks[chunk_id]
    if list(chunk["section_path"]) != path:
        errors.append(f"{where}: section_path {path} != chunk's {chunk['section_path']}")
    text = chunk["text"]
    for n, sentence in enumerate(answer):
        if sentence not in text:
            errors.append(f"{where}: answer[{n}] not in chunk text: {sentence[:60]!r}")
    if fold(item["question"]) in fold(text):
        errors.append(f"{where}: question is a substring of the chunk text")
    return errors


Candidate = tuple[str, str, int, str, list[str]]
"""A chunk of the item's book: chunk_id, chapter, ordinal, text, section_path."""


def gold_chunk(answers: list[str], path: list[str], candidates: list[Candidate]) -> str | None:
    """Of ``candidates``, the one holding every answer string: the item's own section
    first, then a chunk of a chapter on its section path, then the earliest (answers
    recur: pg_dump's and pg_restore's options share sentences). The one rule:
    ``scripts/train_relevance.py`` trains on what this check approves."""
    if not answers:
        return None
    holders = [c for c in candidates if all(a in c[3] for a in answers)]
    holders.sort(key=lambda c: (list(c[4]) != path, c[1] not in path, c[2]))
    return holders[0][0] if holders else None


def resolve(item: dict, chunks: dict) -> str | None:
    """The item's chunk: its ``chunk_id`` when DIR holds it, else ``gold_chunk``."""
    if item["chunk_id"] in chunks:
        return str(item["chunk_id"])
    answers = [a for a in item.get("answer") or [] if isinstance(a, str)]
    path = [str(p) for p in item.get("section_path") or []]
    candidates: list[Candidate] = [
        (cid, c["chapter"], int(c.get("ordinal", 0)), c["text"], list(c["section_path"]))
        for cid, c in chunks.items()
    ]
    return gold_chunk(answers, path, candidates)


def negatives(item: dict, chunks: dict, k: int) -> list[str]:
    """K other chunks of the item's chapter, ordered by a hash seeded with the item id.

    Chunks overlap, so a neighbour may repeat the answering sentence; a chunk that
    contains any of the item's answer strings is not a negative and is skipped.
    """
    own = resolve(item, chunks)
    chapter = chunks[own]["chapter"]
    others = [
        cid
        for cid, chunk in chunks.items()
        if chunk["chapter"] == chapter
        and cid != own
        and not any(answer in chunk["text"] for answer in item["answer"])
    ]
    others.sort(key=lambda cid: hashlib.sha256(f"{item['id']}:{cid}".encode()).hexdigest())
    return others[:k]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--chunks", required=True, type=Path, help="directory of <book>.jsonl")
    parser.add_argument("--negatives", type=int, default=0, metavar="K")
    args = parser.parse_args(argv)

    cache: dict = {}
    errors: list[str] = []
    ids: set[str] = set()
    questions: dict[str, str] = {}
    counts: Counter = Counter()
    partials: Counter = Counter()
    good: list[dict] = []
    for file in args.files:
        with file.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                where = f"{file.name}:{number}"
                if not line.strip():
                    errors.append(f"{where}: blank line")
                    continue
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as exc:
                    errors.append(f"{where}: invalid JSON ({exc})")
                    continue
                found = check_item(where, item, args.chunks, cache)
                errors.extend(found)
                if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                    continue
                if item["id"] in ids:
                    errors.append(f"{where}: duplicate id {item['id']}")
                ids.add(item["id"])
                if isinstance(item.get("question"), str):
                    key = fold(item["question"])
                    if key in questions:
                        errors.append(f"{where}: duplicate question (also {questions[key]})")
                    else:
                        questions[key] = item["id"]
                if not found:
                    counts[(item["book"], item["kind"])] += 1
                    partials[item["book"]] += item["partial"]
                    good.append(item)

    for book in sorted({b for b, _ in counts}):
        total = sum(v for (b, _), v in counts.items() if b == book)
        print(f"{book}: {total} items ({partials[book]} partial)")
        for kind in KINDS:
            n = counts[(book, kind)]
            print(f"  {kind:16} {n:5}  {100 * n / total:5.1f}%")
    if args.negatives > 0:
        for item in good:
            chunks = load_chunks(args.chunks, item["book"], cache)
            print(item["id"], " ".join(negatives(item, chunks, args.negatives)))
    for error in errors:
        print("ERROR", error, file=sys.stderr)
    if errors:
        print(f"{len(errors)} error(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
