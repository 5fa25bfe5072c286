"""The support checker keeps its outputs while it gets faster (issue 14's 5 ms budget).

``data/support_reference.json`` was written by the checker as it stood before the
latency work (commit 8e61c58): 117 pairs in answers of up to 8 — SciFact claims
against their rationale sentences and against whole abstracts (the latency bench's
pairs), quotations of those abstracts (whole sentences, re-spaced, fragments, and
upper-cased ones that are not quotations), non-ASCII text, and hand-made cases
(typographic quotes and dashes, a ligature, a backtick, tabs, an empty segment,
negations, numbers with units, months). Every pair must keep its label and span,
its score and the combiner's score to 1e-9, and every static feature to 1e-9. Five
labels were later changed on purpose, to ``unsupported``, by the short-segment rule
(``checker.SHORT_SEGMENT_TERMS``); their scores are the recorded ones. Three
quotations that state nothing (``stroke``, ``A B``, ``x\x1cy trial``) were later
scored rather than labelled ``verbatim``, by the statement rule of issue 28
(``domain/statement.py``); their labels and scores are the checker's since. Two
unpunctuated short sentences (``Side effects weren't rare - "mild" ones``,
``İstanbul trial enrolled 4000 patients``) were later labelled ``unsupported`` by the
title rule (``statement.is_title``: a title asserts nothing), scores unchanged. The static
checker's scores and features were re-recorded when its word-piece arithmetic moved
from float32 to float64 (every value moved by at most 9e-7, no label or span): float32
sums in a CPU-dependent order, which a 1e-9 tolerance would not survive on a CPU
without AVX-512; float64's differences are far below it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from citadel.adapters.support import FeatureSupportChecker, default_checker, lexical_checker
from citadel.domain.support_features import clear_passage_caches

REFERENCE = json.loads((Path(__file__).parent / "data" / "support_reference.json").read_text())
ANSWERS: list[dict[str, Any]] = REFERENCE["answers"]
PASSAGES: list[str] = REFERENCE["passages"]


def pairs_of(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(segment, PASSAGES[index]) for segment, index in answer["pairs"]]


@pytest.fixture(scope="module")
def checkers() -> dict[str, FeatureSupportChecker]:
    return {"static": default_checker(), "lexical": lexical_checker()}


@pytest.mark.parametrize("kind", ["static", "lexical"])
@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_every_reference_answer_gets_the_results_it_got_before(
    checkers: dict[str, FeatureSupportChecker], kind: str, cold: bool
) -> None:
    checker = checkers[kind]
    for number, answer in enumerate(ANSWERS):
        if cold:
            clear_passage_caches()
        pairs = pairs_of(answer)
        results = checker.check(pairs)
        scores = checker.scores(pairs)
        features = checker.features(pairs)
        for k, expected in enumerate(answer[kind]):
            where = f"answer {number} ({answer['set']}), pair {k}"
            assert results[k].label.value == expected["label"], where
            assert results[k].score == pytest.approx(expected["score"], abs=1e-9), where
            assert (list(results[k].span) if results[k].span else None) == expected["span"], where
            assert scores[k] == pytest.approx(expected["combiner_score"], abs=1e-9), where
            if "features" in expected:
                assert features[k].tolist() == pytest.approx(expected["features"], abs=1e-9), where


def test_the_reference_covers_what_it_says() -> None:
    labels = {x["label"] for a in ANSWERS for x in a["static"]}
    assert labels == {"verbatim", "supported", "partial", "unsupported"}
    sets = {a["set"] for a in ANSWERS}
    assert sets == {"scifact", "answers", "verbatim", "handmade"}
    assert any(not s.isascii() for a in ANSWERS for s, _ in pairs_of(a))
    assert any(not p.isascii() for p in PASSAGES)
