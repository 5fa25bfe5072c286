"""Check hand-written answerable-question files against the book chunks.

Usage:
    check_answerability_data.py FILE... --chunks DIR [--negatives K]

Each FILE is JSON Lines with the fields id, book, chunk_id, section_path, kind,
question, answer (list of exact substrings of the chunk text) and partial.
DIR holds <book>.jsonl chunk files. Prints counts per book and kind; exits 1
on any error. With --negatives K, also prints per item K hard-negative
chunk_ids: other chunks of the same chapter, chosen deterministically.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

FIELDS = {
    "id": str,
    "book": str,
    "chunk_id": str,
    "section_path": list,
    "kind": str,
    "question": str,
    "answer": list,
    "partial": bool,
}
KINDS = ("how-to", "why", "what-is", "comparison", "troubleshooting")


def load_chunks(directory: Path, book: str) -> list[dict]:
    path = directory / f"{book}.jsonl"
    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def hard_negatives(item: dict, chunks: list[dict], k: int) -> list[str]:
    """K other chunks of the item's chapter, in a stable pseudo-random order.

    Chunks overlap their neighbours by a sentence or so, so a chunk that
    contains any of the item's answer strings is not a negative and is skipped.
    """
    by_id = {c["chunk_id"]: c for c in chunks}
    gold = by_id[item["chunk_id"]]
    others = [
        c["chunk_id"]
        for c in chunks
        if c.get("chapter") == gold.get("chapter")
        and c["chunk_id"] != gold["chunk_id"]
        and not any(answer in c["text"] for answer in item["answer"])
    ]

    def key(chunk_id: str) -> str:
        return hashlib.sha256(f"{item['id']}:{chunk_id}".encode()).hexdigest()

    return sorted(others, key=key)[:k]


def check_item(item: dict, chunk_index: dict[str, dict]) -> list[str]:
    errors = []
    if not isinstance(item, dict):
        return ["not a JSON object"]
    if set(item) != set(FIELDS):
        errors.append(f"fields {sorted(item)} != {sorted(FIELDS)}")
    for name, kind in FIELDS.items():
        if name in item and not isinstance(item[name], kind):
            errors.append(f"{name} is not {kind.__name__}")
    if errors:
        return errors
    if item["kind"] not in KINDS:
        errors.append(f"kind {item['kind']!r} not one of {KINDS}")
    if not item["id"].startswith(item["book"] + "-q"):
        errors.append(f"id {item['id']!r} does not start with {item['book']}-q")
    chunk = chunk_index.get(item["chunk_id"])
    if chunk is None:
        errors.append(f"chunk_id {item['chunk_id']} not in {item['book']}")
        return errors
    if item["section_path"] != chunk["section_path"]:
        errors.append("section_path differs from the chunk's")
    text = chunk["text"]
    question = item["question"].strip()
    if not question:
        errors.append("empty question")
    elif question in text:
        errors.append("question is a substring of the chunk text")
    if not item["answer"]:
        errors.append("empty answer list")
    for answer in item["answer"]:
        if not isinstance(answer, str) or not answer.strip():
            errors.append("answer entry is empty or not a string")
        elif answer not in text:
            errors.append(f"answer not in chunk text: {answer[:60]!r}")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--chunks", required=True, type=Path)
    parser.add_argument("--negatives", type=int, default=0, metavar="K")
    args = parser.parse_args(argv)

    chunk_cache: dict[str, list[dict]] = {}
    seen_ids: set[str] = set()
    counts: dict[str, Counter] = defaultdict(Counter)
    n_errors = 0
    for path in args.files:
        with path.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                where = f"{path}:{lineno}"
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as exc:
                    print(f"{where}: bad JSON: {exc}")
                    n_errors += 1
                    continue
                book = item.get("book") if isinstance(item, dict) else None
                if isinstance(book, str) and book not in chunk_cache:
                    chunk_cache[book] = load_chunks(args.chunks, book)
                chunks = chunk_cache.get(book, []) if isinstance(book, str) else []
                index = {c["chunk_id"]: c for c in chunks}
                errors = check_item(item, index)
                if isinstance(item, dict) and "id" in item:
                    if item["id"] in seen_ids:
                        errors.append(f"duplicate id {item['id']}")
                    seen_ids.add(item["id"])
                for error in errors:
                    print(f"{where}: {error}", file=sys.stderr if args.negatives else sys.stdout)
                n_errors += len(errors)
                if errors:
                    continue
                counts[book][item["kind"]] += 1
                if args.negatives > 0:
                    negs = hard_negatives(item, chunks, args.negatives)
                    print(json.dumps({"id": item["id"], "negatives": negs}))

    # With --negatives, stdout carries only the JSON lines; the summary goes to stderr.
    summary = sys.stderr if args.negatives > 0 else sys.stdout
    for book in sorted(counts):
        total = sum(counts[book].values())
        parts = ", ".join(
            f"{kind} {counts[book][kind]} ({100 * counts[book][kind] / total:.0f}%)"
            for kind in KINDS
        )
        print(f"{book}: {total} items: {parts}", file=summary)
    print(f"errors: {n_errors}", file=summary)
    return 1 if n_errors else 0


if __name__ == "__main__":
    sys.exit(main())
