"""Another assistant's answers with planted citations of known categories, for shadow mode.

``plant(places, seed)`` writes 200 answer records against the library ``build_library``
makes (tests/integration/test_shadow_planted.py), each citation drawn from templates of
one category, and returns the records with the category planted at each citation, in
order. Readers: ``alice`` (no groups: the staff-only source is forbidden to her) and
``sam`` (staff); a record without a user is judged for whoever runs the report.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

HOST = "docs.example.org"
URL = f"https://{HOST}"
SHOWN_AT = "2100-01-01T00:00:00Z"
"""After every version the test registers: each source's current version is the allowed one."""


@dataclass(frozen=True)
class Places:
    """Where the test library's sources were ingested from (absolute paths)."""

    moved_old_origin: str
    moved_new_origin: str


Template = Callable[[int], Any]


def _templates(places: Places) -> dict[str, list[Template]]:
    return {
        "ok": [
            lambda n: "guide",
            lambda n: "guide@2",
            lambda n: f"{URL}/guide",
            lambda n: f"https://DOCS.Example.org/guide/#section-{n}",
            lambda n: {"url": f"{URL}/other", "doc_id": "other"},
            lambda n: {"url": f"{URL}/new-place", "doc_id": "moved", "version": 2},
            lambda n: places.moved_new_origin,
            lambda n: "retained@3",
        ],
        "fabricated": [
            lambda n: f"{URL}/guide-{n}",
            lambda n: f"https://policies.example.com/sg/contractor-expense-{n}",
            lambda n: {"url": f"{URL}/guide?page={n}", "doc_id": "guide"},
            lambda n: f"javascript:alert({n})",
            lambda n: f"https://user@{HOST}/guide#{n}",
        ],
        "moved": [
            lambda n: f"{URL}/old-place",
            lambda n: f"{URL}/old-place/#p{n}",
            lambda n: places.moved_old_origin,
            lambda n: f"file://{places.moved_old_origin}",
            lambda n: {"url": f"{URL}/old-place", "doc_id": "moved"},
        ],
        "outdated": [
            lambda n: "guide@1",
            lambda n: {"url": f"{URL}/guide", "version": 1},
            lambda n: "retained@2",
            lambda n: {"url": f"{URL}/new-place", "doc_id": "moved", "version": 1},
        ],
        "wrong_document": [
            lambda n: {"url": f"{URL}/other", "doc_id": "guide"},
            lambda n: {"url": f"{URL}/guide", "doc_id": "other"},
            lambda n: {"url": f"{URL}/new-place", "doc_id": "guide"},
        ],
        "no_such_document": [
            lambda n: f"policy-{n}",
            lambda n: "guide@9",
            lambda n: f"/nowhere/{n}.md",
            lambda n: {"url": f"{URL}/guide", "doc_id": f"retrieved-{n}"},
        ],
        "unavailable": [
            lambda n: "gone",
            lambda n: f"{URL}/gone",
            lambda n: "retained@1",
        ],
        # Only in records shown to alice.
        "forbidden": [
            lambda n: "secret",
            lambda n: f"{URL}/secret#{n}",
            lambda n: "secret@1",
        ],
    }


WEIGHTS = {
    "ok": 10,
    "fabricated": 3,
    "moved": 2,
    "outdated": 2,
    "wrong_document": 2,
    "no_such_document": 2,
    "unavailable": 2,
    "forbidden": 2,
}


def plant(places: Places, seed: int = 18, answers: int = 200) -> tuple[list[str], list[str]]:
    """``answers`` JSON lines and the category planted at each citation, in order."""
    rng = random.Random(seed)
    templates = _templates(places)
    lines: list[str] = []
    planted: list[str] = []
    for number in range(1, answers + 1):
        user = rng.choice(["alice", "sam", None])
        allowed = [c for c in WEIGHTS if c != "forbidden" or user == "alice"]
        citations: list[Any] = []
        for _ in range(rng.randint(1, 5)):
            kind = rng.choices(allowed, weights=[WEIGHTS[c] for c in allowed])[0]
            citations.append(rng.choice(templates[kind])(len(planted)))
            planted.append(kind)
        record: dict[str, Any] = {
            "id": f"ans-{number:03d}",
            "question": f"Question {number} about the guide?",
            "answer": f"An answer by the old assistant [{len(citations)} citations].",
            "citations": citations,
            "timestamp": SHOWN_AT,
        }
        if user is not None:
            record["user"] = user
        lines.append(json.dumps(record))
    return lines, planted


def counts(planted: Sequence[str]) -> dict[str, int]:
    found = Counter(planted)
    return {category: found.get(category, 0) for category in WEIGHTS}
