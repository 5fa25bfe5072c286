"""Check a file of questions the library does not answer (JSON Lines).

Usage: python scripts/check_unanswerable_data.py FILE

Each line: {"id", "kind": "far"|"near", "topic", "near_book", "question", "checked": [...]}.
A near item names the book whose words it shares most and carries at least one search
check whose answers is false. Prints counts per kind, topic and near_book; exits 1 on error.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

FIELDS = ("id", "kind", "topic", "near_book", "question", "checked")
KINDS = ("far", "near")
BOOKS = ("r-intro", "pari-tutorial", "python-tutorial", "git-manual", "postgresql-manual")
CHECK_FIELDS = ("query", "top", "answers")


def fold(text: str) -> str:
    """Case- and space-folded form of a question, for duplicate detection."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def check_checks(where: str, kind: str, checked: object) -> list[str]:
    if not isinstance(checked, list):
        return [f"{where}: checked must be a list"]
    errors: list[str] = []
    for n, check in enumerate(checked):
        at = f"{where}: checked[{n}]"
        if not isinstance(check, dict) or set(check) != set(CHECK_FIELDS):
            errors.append(f"{at} must have exactly the fields {CHECK_FIELDS}")
            continue
        if not isinstance(check["query"], str) or not check["query"].strip():
            errors.append(f"{at}.query must be a non-empty string")
        top = check["top"]
        if not isinstance(top, list) or not all(isinstance(t, str) and t for t in top):
            errors.append(f"{at}.top must be a list of non-empty strings")
        if not isinstance(check["answers"], bool):
            errors.append(f"{at}.answers must be true or false")
    if kind == "near" and not any(
        isinstance(c, dict) and c.get("answers") is False for c in checked
    ):
        errors.append(f"{where}: a near item needs a check with answers=false")
    if any(isinstance(c, dict) and c.get("answers") is True for c in checked):
        errors.append(f"{where}: a check found an answer; the item should be dropped")
    return errors


def check_item(where: str, item: object) -> list[str]:
    if not isinstance(item, dict):
        return [f"{where}: not a JSON object"]
    if set(item) != set(FIELDS):
        missing = sorted(set(FIELDS) - set(item))
        extra = sorted(set(item) - set(FIELDS))
        return [f"{where}: fields differ (missing {missing}, extra {extra})"]
    errors: list[str] = []
    if not isinstance(item["id"], str) or not re.fullmatch(r"u\d{4,}", item["id"]):
        errors.append(f"{where}: id must look like u0001")
    kind = item["kind"]
    if kind not in KINDS:
        errors.append(f"{where}: kind must be one of {KINDS}")
    if not isinstance(item["topic"], str) or not item["topic"].strip():
        errors.append(f"{where}: topic must be a non-empty string")
    book = item["near_book"]
    if kind == "near" and book not in BOOKS:
        errors.append(f"{where}: near_book must be one of {BOOKS} for a near item")
    if kind == "far" and book is not None:
        errors.append(f"{where}: near_book must be null for a far item")
    question = item["question"]
    if not isinstance(question, str) or len(question.strip()) < 5:
        errors.append(f"{where}: question must be a string of at least 5 characters")
    errors.extend(check_checks(where, kind, item["checked"]))
    return errors


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    path = Path(argv[1])
    errors: list[str] = []
    ids: set[str] = set()
    questions: dict[str, str] = {}
    kinds: Counter[str] = Counter()
    topics: Counter[tuple[str, str]] = Counter()
    books: Counter[str] = Counter()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            where = f"{path.name}:{number}"
            if not line.strip():
                errors.append(f"{where}: blank line")
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: not JSON ({exc})")
                continue
            item_errors = check_item(where, item)
            errors.extend(item_errors)
            if item_errors:
                continue
            if item["id"] in ids:
                errors.append(f"{where}: duplicate id {item['id']}")
            ids.add(item["id"])
            key = fold(item["question"])
            if key in questions:
                errors.append(f"{where}: duplicate question (also {questions[key]})")
            questions[key] = item["id"]
            kinds[item["kind"]] += 1
            topics[(item["kind"], item["topic"])] += 1
            if item["near_book"]:
                books[item["near_book"]] += 1
    print(f"{len(ids)} items")
    for kind, count in sorted(kinds.items()):
        print(f"kind {kind}: {count}")
    for book, count in sorted(books.items()):
        print(f"near_book {book}: {count}")
    for (kind, topic), count in sorted(topics.items()):
        print(f"topic {kind}/{topic}: {count}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if errors:
        print(f"{len(errors)} errors", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
