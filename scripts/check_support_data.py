"""Check hand-written (passage, sentence, label) triples for the support checker.

Usage: check_support_data.py FILE... --chunks DIR

DIR holds one ``<book>.jsonl`` per book (chunk_id, text, ...), as
``citadel sources chunks SOURCE_ID --json`` prints it. Chunk ids hash the source id,
which each ingest draws anew, so a row whose ``chunk_id`` this DIR does not hold is
matched by its text: its passage must be an exact substring of one of the book's
chunks. Exits 1 on any error.
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
    "SUPPORT": {
        "paraphrase",
        "summary",
        "generalisation",
        "negation_in_passage",
        "short_statement",
        "two_sentences",
    },
    "NEI": {
        "added_specific",
        "off_target",
        # shaped like a small model's failures (data/support/WRITING.md, "Failure-shaped rows")
        "heading",
        "meta",
        "non_answer",
        "background",
        "half_copied",
        "garbled",
    },
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
MIN_MATCHED_PASSAGE = 40
"""Characters a passage needs to be matched by its text (the shortest written is 51)."""
# sentence length in words: 8-35 unless the kind says otherwise
WORDS = {
    "heading": (1, 15),
    "non_answer": (2, 25),
    "meta": (5, 35),
    "background": (6, 35),
    "garbled": (5, 40),
    "half_copied": (12, 60),
    "short_statement": (3, 10),
    "two_sentences": (15, 60),
}
# kinds whose sentence may copy the passage (a heading offered as an answer is not a statement)
COPY_ALLOWED = {"heading"}
# kinds of augmented rows are the perturbation names (scripts/augment_support_data.py)
AUGMENTED_KINDS = {
    "number",
    "unit",
    "identifier",
    "negation_insert",
    "negation_remove",
    "antonym",
}
NEG = re.compile(
    r"\b(not|no|never|none|nothing|cannot|can't|neither|nor|without|"
    r"isn't|aren't|doesn't|don't|didn't|won't|wasn't|weren't|unable)\b|n't\b",
    re.IGNORECASE,
)


def load_chunks(directory: Path, book: str, cache: dict) -> dict:
    if book not in cache:
        path = directory / f"{book}.jsonl"
        table = {}
        if path.exists():
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    row = json.loads(line)
                    table[row["chunk_id"]] = row["text"]
        cache[book] = table
    return cache[book]


def check_row(row, where, chunks_dir, cache, seen, errors) -> bool:
    def err(msg: str) -> None:
        errors.append(f"{where}: {msg}")

    if not isinstance(row, dict):
        err("not an object")
        return False
    if set(row) != set(FIELDS):
        err(f"fields {sorted(row)} != {sorted(FIELDS)}")
        return False
    for key in FIELDS:
        if not isinstance(row[key], str) or not row[key].strip():
            err(f"{key} must be a non-empty string")
            return False
    if row["id"] in seen:
        err(f"duplicate id {row['id']}")
    seen.add(row["id"])
    if not row["id"].startswith(row["book"] + "-"):
        err("id does not start with the book name")
    label, kind = row["label"], row["kind"]
    if row["origin"] not in ORIGINS:
        err(f"bad origin {row['origin']!r}")
    if label not in KINDS:
        err(f"bad label {label!r}")
    elif row["origin"] == "written" and kind not in KINDS[label]:
        err(f"kind {kind!r} does not belong to {label}")
    elif row["origin"] == "augmented" and (label != "CONTRADICT" or kind not in AUGMENTED_KINDS):
        err(f"augmented row must be CONTRADICT with a perturbation kind, got {label}/{kind}")
    chunks = load_chunks(chunks_dir, row["book"], cache)
    text = chunks.get(row["chunk_id"])
    if text is None:
        # Matched by text only when the passage is long enough to name its chunk.
        if len(row["passage"]) < MIN_MATCHED_PASSAGE:
            err(f"chunk {row['chunk_id']} not in DIR, and the passage is too short to match")
        elif not any(row["passage"] in other for other in chunks.values()):
            err(f"passage is in no chunk of {row['book']} (chunk {row['chunk_id']} not in DIR)")
    elif row["passage"] not in text:
        err("passage is not an exact substring of the chunk text")
    sentence = row["sentence"]
    if sentence in row["passage"] and kind not in COPY_ALLOWED:
        err("sentence is a substring of the passage")
    words = len(sentence.split())
    low, high = WORDS.get(kind, (8, 35))
    if not low <= words <= high:
        err(f"sentence has {words} words (need {low}-{high} for {kind})")
    if "\n" in sentence:
        err("sentence contains a newline")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--chunks", required=True, type=Path)
    args = ap.parse_args(argv)

    errors: list[str] = []
    seen: set[str] = set()
    cache: dict = {}
    rows = []
    for path in args.files:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                where = f"{path}:{n}"
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    errors.append(f"{where}: bad JSON ({exc})")
                    continue
                if check_row(row, where, args.chunks, cache, seen, errors):
                    rows.append(row)

    by_book = collections.Counter(r["book"] for r in rows)
    by_label = collections.Counter((r["book"], r["label"]) for r in rows)
    by_kind = collections.Counter((r["label"], r["kind"]) for r in rows)
    print(f"{len(rows)} rows")
    for book, n in sorted(by_book.items()):
        labels = {lab: by_label[(book, lab)] for lab in KINDS}
        share = {lab: f"{v / n:.0%}" for lab, v in labels.items()}
        print(f"  {book}: {n}  {labels}  {share}")
    total = collections.Counter(r["label"] for r in rows)
    print("labels:", dict(total))
    for (label, kind), n in sorted(by_kind.items()):
        print(f"  {label:10s} {kind:20s} {n}")
    for label in ("SUPPORT", "NEI", "CONTRADICT"):
        group = [r for r in rows if r["label"] == label]
        if group:
            neg = sum(1 for r in group if NEG.search(r["sentence"]))
            print(f"negation word in {label}: {neg}/{len(group)} = {neg / len(group):.1%}")
    for e in errors[:200]:
        print("ERROR", e, file=sys.stderr)
    if errors:
        print(f"{len(errors)} errors", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
