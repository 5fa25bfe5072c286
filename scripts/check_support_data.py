"""Check (passage, sentence, label) triples for the support checker.

Usage: check_support_data.py FILE... --chunks DIR

Each FILE is JSON Lines with the fields id, book, chunk_id, passage, sentence,
label, kind, origin. The chunk file for a book is DIR/<book>.jsonl. Prints
counts per book, label and kind, and the share of SUPPORT and CONTRADICT
sentences containing a negation word. Exits 1 when any error is found.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

FIELDS = ("id", "book", "chunk_id", "passage", "sentence", "label", "kind", "origin")
KINDS = {
    "SUPPORT": {"paraphrase", "summary", "generalisation", "negation_in_passage"},
    "NEI": {"added_specific", "off_target"},
    "CONTRADICT": {
        "negation",
        "direction",
        "value",
        "command",
        "roles",
        "quantifier",
        "before_after",
    },
}
ORIGINS = {"written", "augmented"}
NEGATION = re.compile(
    r"\b(not|no|never|none|nothing|neither|nor|cannot|without)\b|n't\b",
    re.IGNORECASE,
)


def load_chunks(directory: Path, book: str, cache: dict) -> dict[str, str]:
    if book not in cache:
        path = directory / f"{book}.jsonl"
        texts: dict[str, str] = {}
        if path.exists():
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    row = json.loads(line)
                    texts[row["chunk_id"]] = row["text"]
        cache[book] = texts
    return cache[book]


def check_row(row: object, chunks: dict[str, str] | None) -> list[str]:
    if not isinstance(row, dict):
        return ["not a JSON object"]
    errors = []
    if set(row) != set(FIELDS):
        errors.append(f"fields {sorted(row)} != {sorted(FIELDS)}")
    for field in FIELDS:
        if not isinstance(row.get(field), str) or not row.get(field):
            errors.append(f"{field} missing, empty or not a string")
    if errors:
        return errors
    label, kind = row["label"], row["kind"]
    if label not in KINDS:
        errors.append(f"bad label {label!r}")
    elif kind not in KINDS[label]:
        errors.append(f"kind {kind!r} does not belong to label {label}")
    if row["origin"] not in ORIGINS:
        errors.append(f"bad origin {row['origin']!r}")
    if chunks is None or row["chunk_id"] not in chunks:
        errors.append(f"chunk {row['chunk_id']} not found for book {row['book']}")
    elif row["passage"] not in chunks[row["chunk_id"]]:
        errors.append("passage is not an exact substring of the chunk text")
    if row["sentence"].strip() in row["passage"]:
        errors.append("sentence is a substring of the passage")
    words = len(row["sentence"].split())
    if not 8 <= words <= 35:
        errors.append(f"sentence has {words} words (8-35)")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--chunks", required=True, type=Path)
    args = parser.parse_args(argv)

    cache: dict[str, dict[str, str]] = {}
    seen: set[str] = set()
    n_errors = 0
    per_label: collections.Counter = collections.Counter()
    per_kind: collections.Counter = collections.Counter()
    negated: collections.Counter = collections.Counter()
    for path in args.files:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                where = f"{path}:{number}"
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    print(f"{where}: invalid JSON: {exc}")
                    n_errors += 1
                    continue
                book = row.get("book") if isinstance(row, dict) else None
                chunks = load_chunks(args.chunks, book, cache) if isinstance(book, str) else None
                errors = check_row(row, chunks)
                if isinstance(row, dict):
                    if row.get("id") in seen:
                        errors.append(f"duplicate id {row.get('id')}")
                    seen.add(row.get("id"))
                for error in errors:
                    print(
                        f"{where}: {row.get('id', '?') if isinstance(row, dict) else '?'}: {error}"
                    )
                n_errors += len(errors)
                if errors:
                    continue
                per_label[(book, row["label"])] += 1
                per_kind[(book, row["label"], row["kind"])] += 1
                if NEGATION.search(row["sentence"]):
                    negated[(book, row["label"])] += 1

    books = sorted({book for book, _ in per_label})
    for book in books:
        total = sum(v for (b, _), v in per_label.items() if b == book)
        print(f"{book}: {total}")
        for label, kinds in KINDS.items():
            count = per_label[(book, label)]
            share = 100 * count / total if total else 0
            print(f"  {label}: {count} ({share:.0f}%)")
            for kind in sorted(kinds):
                if per_kind[(book, label, kind)]:
                    print(f"    {kind}: {per_kind[(book, label, kind)]}")
    print(f"total: {sum(per_label.values())}")
    for label in ("SUPPORT", "CONTRADICT"):
        count = sum(v for (_, lab), v in per_label.items() if lab == label)
        neg = sum(v for (_, lab), v in negated.items() if lab == label)
        share = 100 * neg / count if count else 0
        print(f"{label} sentences with a negation word: {neg}/{count} ({share:.0f}%)")
    print(f"errors: {n_errors}")
    return 1 if n_errors else 0


if __name__ == "__main__":
    sys.exit(main())
