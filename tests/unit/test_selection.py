"""Closed evidence selection, exactly as the seed describes it.

Every admission is bounded (passages, bytes per passage, bytes of id + passage +
source fields), well formed (non-empty id, valid UTF-8) and unique (ids and
normalised passages); diversity across (source, chapter, section) comes first,
then backfill in rank order.
"""

from __future__ import annotations

import pytest

from citadel.domain.errors import InvalidValue
from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence
from citadel.domain.search import Evidence
from citadel.domain.selection import context_bytes, select_evidence
from tests.builders import make_evidence


def ids(selected: tuple[ContextEvidence, ...]) -> list[str]:
    return [item.evidence_id for item in selected]


def distinct(n: int, **overrides: object) -> list[Evidence]:
    """``n`` evidence items, each in its own group and with its own passage."""
    return [
        make_evidence(
            f"e{i}",
            f"Passage number {i} says something different about retries.",
            section=f"Section {i}",
            **overrides,  # type: ignore[arg-type]
        )
        for i in range(n)
    ]


def test_empty_ranking_selects_nothing() -> None:
    assert select_evidence([], Limits()) == ()


def test_keeps_rank_order_and_wraps_the_evidence_unchanged() -> None:
    ranked = distinct(3)
    selected = select_evidence(ranked, Limits())
    assert ids(selected) == ["e0", "e1", "e2"]
    assert [item.evidence for item in selected] == ranked


def test_at_most_max_evidence_passages() -> None:
    selected = select_evidence(distinct(12), Limits())
    assert ids(selected) == [f"e{i}" for i in range(8)]  # the default is 8
    assert ids(select_evidence(distinct(12), Limits(max_evidence=3))) == ["e0", "e1", "e2"]


def test_passage_over_the_byte_limit_is_skipped_and_selection_goes_on() -> None:
    limits = Limits(max_passage_bytes=64)
    ranked = [
        make_evidence("big", "x" * 65, section="a"),
        make_evidence("fits", "y" * 64, section="b"),
    ]
    assert ids(select_evidence(ranked, limits)) == ["fits"]


def test_passage_limit_counts_utf8_bytes_not_characters() -> None:
    limits = Limits(max_passage_bytes=64)
    # 33 characters, 66 bytes: over the limit although it is short in characters.
    wide = make_evidence("wide", "é" * 33, section="a")
    narrow = make_evidence("narrow", "é" * 32, section="b")  # exactly 64 bytes
    assert ids(select_evidence([wide, narrow], limits)) == ["narrow"]


def test_default_passage_limit_is_8_kib() -> None:
    at_limit = make_evidence("at", "a" * 8192, section="a")
    over = make_evidence("over", "b" * 8193, section="b")
    assert ids(select_evidence([over, at_limit], Limits())) == ["at"]


def test_context_bytes_count_the_id_the_passage_and_the_source_fields() -> None:
    item = ContextEvidence(
        make_evidence(
            "ev-é",  # 5 bytes
            "passage",  # 7
            title="Title",  # 5
            author="Ann",  # 3
            chapter="Ch 1",  # 4
            section="Sec",  # 3
            page_label_start="17",
            page_label_end="18",  # pages "17–18": 2 + 3 + 2 = 7 bytes
        )
    )
    assert context_bytes(item) == 5 + 7 + 5 + 3 + 4 + 3 + 7


def test_total_context_budget_stops_admission() -> None:
    ranked = distinct(4)
    costs = [context_bytes(ContextEvidence(e)) for e in ranked]
    limits = Limits(max_context_bytes=costs[0] + costs[1] + costs[2] - 1)
    assert ids(select_evidence(ranked, limits)) == ["e0", "e1"]
    exact = Limits(max_context_bytes=costs[0] + costs[1] + costs[2])
    assert ids(select_evidence(ranked, exact)) == ["e0", "e1", "e2"]


def test_source_fields_count_against_the_context_budget() -> None:
    passage_a = "The same length of passage text, alpha."
    passage_b = "The same length of passage text, bravo."
    long_title = make_evidence("long", passage_a, title="T" * 500, section="a")
    short_title = make_evidence("short", passage_b, title="T", section="b")
    limits = Limits(max_context_bytes=context_bytes(ContextEvidence(short_title)))
    # The long title alone exceeds the budget even though its passage is the same size.
    assert ids(select_evidence([long_title, short_title], limits)) == ["short"]


def test_a_smaller_later_passage_may_still_fit_the_remaining_budget() -> None:
    first = make_evidence("first", "a" * 100, section="a")
    large = make_evidence("large", "b" * 400, section="b")
    small = make_evidence("small", "c" * 100, section="c")
    budget = context_bytes(ContextEvidence(first)) + context_bytes(ContextEvidence(small))
    assert ids(select_evidence([first, large, small], Limits(max_context_bytes=budget))) == [
        "first",
        "small",
    ]


@pytest.mark.parametrize("bad_id", ["", "   ", "\n"])
def test_empty_evidence_ids_are_skipped(bad_id: str) -> None:
    ranked = [make_evidence(bad_id, "A passage with an empty id.", section="a"), *distinct(1)]
    assert ids(select_evidence(ranked, Limits())) == ["e0"]


@pytest.mark.parametrize("passage", ["", "   ", "\n\t "])
def test_empty_passages_are_skipped(passage: str) -> None:
    ranked = [make_evidence("blank", passage, section="a"), *distinct(1)]
    assert ids(select_evidence(ranked, Limits())) == ["e0"]


@pytest.mark.parametrize(
    "field",
    ["passage", "evidence_id", "title", "author", "chapter", "section", "page_label_start"],
)
def test_invalid_utf8_anywhere_in_the_context_fields_is_skipped(field: str) -> None:
    values: dict[str, object] = {
        "evidence_id": "bad",
        "passage": "A passage whose fields are checked.",
        "section": "a",
    }
    values[field] = f"{values.get(field, 'x')}\ud800"  # a lone surrogate cannot be UTF-8
    bad = make_evidence(**values)  # type: ignore[arg-type]
    assert ids(select_evidence([bad, *distinct(1)], Limits())) == ["e0"]


def test_duplicate_evidence_ids_keep_the_first() -> None:
    first = make_evidence("dup", "The first passage under this id.", section="a")
    second = make_evidence("dup", "A different passage under the same id.", section="b")
    selected = select_evidence([first, second], Limits())
    assert [item.evidence for item in selected] == [first]


@pytest.mark.parametrize(
    ("kept", "dropped"),
    [
        ("A retry policy caps attempts.", "a RETRY policy CAPS attempts."),
        ("A retry policy caps attempts.", "  A retry\n\tpolicy   caps attempts.  "),
        ("The file is read.", "The \ufb01le is read."),  # NFKC: the "fi" ligature
        ("ABC 123 retry", "ＡＢＣ １２３ retry"),  # NFKC: full-width forms
        ("Straße", "STRASSE"),  # case folding, not just lower()
    ],
)
def test_duplicate_passages_after_normalisation_are_removed(kept: str, dropped: str) -> None:
    ranked = [
        make_evidence("one", kept, source_id="s1", section="a"),
        make_evidence("two", dropped, source_id="s2", section="b"),
        make_evidence("three", "Something else entirely.", source_id="s3"),
    ]
    assert ids(select_evidence(ranked, Limits())) == ["one", "three"]


def test_one_per_group_first_then_backfill_in_rank_order() -> None:
    ranked = [
        make_evidence("a1", "alpha one", source_id="s1", chapter="C1", section="S1"),
        make_evidence("a2", "alpha two", source_id="s1", chapter="C1", section="S1"),
        make_evidence("b1", "bravo one", source_id="s1", chapter="C1", section="S2"),
        make_evidence("a3", "alpha three", source_id="s1", chapter="C1", section="S1"),
        make_evidence("c1", "charlie one", source_id="s1", chapter="C2", section="S1"),
        make_evidence("d1", "delta one", source_id="s2", chapter="C1", section="S1"),
        make_evidence("b2", "bravo two", source_id="s1", chapter="C1", section="S2"),
    ]
    # Groups differ by source, by chapter, or by section: a1, b1, c1 and d1 head four groups.
    assert ids(select_evidence(ranked, Limits(max_evidence=4))) == ["a1", "b1", "c1", "d1"]
    assert ids(select_evidence(ranked, Limits())) == ["a1", "b1", "c1", "d1", "a2", "a3", "b2"]
    assert ids(select_evidence(ranked, Limits(max_evidence=5))) == ["a1", "b1", "c1", "d1", "a2"]


def test_a_group_whose_head_is_refused_is_still_represented_by_its_next_passage() -> None:
    limits = Limits(max_passage_bytes=32)
    ranked = [
        make_evidence("g1-too-big", "x" * 40, section="G1"),
        make_evidence("g2", "second group passage", section="G2"),
        make_evidence("g1-ok", "first group passage", section="G1"),
        make_evidence("g2-more", "another second group passage", section="G2"),
    ]
    assert ids(select_evidence(ranked, limits)) == ["g2", "g1-ok", "g2-more"]


def test_minimum_score_filters_on_the_normalised_score_inclusively() -> None:
    ranked = [
        make_evidence("high", "high scoring passage", score=0.9, section="a"),
        make_evidence("edge", "passage exactly at the floor", score=0.5, section="b"),
        make_evidence("low", "low scoring passage", score=0.49, section="c"),
    ]
    assert ids(select_evidence(ranked, Limits(), minimum_score=0.5)) == ["high", "edge"]
    assert ids(select_evidence(ranked, Limits(), minimum_score=0.0)) == ["high", "edge", "low"]
    assert ids(select_evidence(ranked, Limits(), minimum_score=1.0)) == []


@pytest.mark.parametrize("minimum", [-0.01, 1.01, float("nan")])
def test_minimum_score_outside_0_1_is_refused(minimum: float) -> None:
    with pytest.raises(ValueError, match="minimum_evidence_score"):
        select_evidence(distinct(1), Limits(), minimum_score=minimum)


@pytest.mark.parametrize("score", [-0.1, 1.5, float("nan")])
def test_evidence_scores_must_already_be_normalised(score: float) -> None:
    with pytest.raises(InvalidValue):
        make_evidence(score=score)


def test_selection_is_bounded_whatever_retrieval_returns() -> None:
    limits = Limits(max_evidence=5, max_passage_bytes=300, max_context_bytes=1200)
    ranked = [
        make_evidence(f"e{i}", f"{i} " + "word " * (i % 70), section=f"s{i % 3}")
        for i in range(200)
    ]
    selected = select_evidence(ranked, limits)
    assert 0 < len(selected) <= limits.max_evidence
    assert sum(context_bytes(item) for item in selected) <= limits.max_context_bytes
    assert all(len(item.passage.encode()) <= limits.max_passage_bytes for item in selected)
    assert len(set(ids(selected))) == len(selected)


def test_a_passage_near_the_top_is_kept_whatever_diversity_would_pick() -> None:
    # The is.na case: the best section's second passage (0.585 against 0.627) would
    # wait for backfill behind eight weaker sections and fall out of the evidence.
    best = make_evidence("na1", "NaN values", section="Missing values", score=0.627)
    second = make_evidence("na2", "is.na(x) tests for NA", section="Missing values", score=0.585)
    others = [
        make_evidence(f"o{i}", f"other passage {i}", section=f"S{i}", score=0.5 - i / 100)
        for i in range(10)
    ]
    ranked = [best, *others, second]
    assert "na2" not in ids(select_evidence(ranked, Limits()))  # diversity alone
    kept = ids(select_evidence(ranked, Limits(), near_top=0.85))
    assert kept[:2] == ["na1", "na2"] and len(kept) == 8
    # A passage below the share still waits for its turn.
    assert "na2" not in ids(select_evidence(ranked, Limits(), near_top=0.95))


def test_near_top_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="near_top"):
        select_evidence(distinct(2), Limits(), near_top=0.0)
