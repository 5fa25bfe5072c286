"""Fusion turns two rankings into one score in [0, 1] that a threshold can use."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citadel.domain.errors import InvalidValue
from citadel.domain.fusion import FusionPolicy, calibrate, dense_evidence, fuse, term_coverage

WEIGHTED = FusionPolicy("weighted", 0.5, 0.5)
RRF = FusionPolicy("rrf", 1.0, 1.0, 60)


def test_weighted_normalises_each_list_per_query_and_mixes() -> None:
    fused = dict(fuse([("a", 10.0), ("b", 5.0)], [("b", 0.8), ("c", 0.4)], WEIGHTED))
    assert fused == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.25})


def test_a_strong_lexical_only_hit_keeps_a_usable_score() -> None:
    fused = dict(fuse([("only-lexical", 12.0)], [("x", 0.9)], FusionPolicy("weighted", 0.6, 0.4)))
    assert fused["only-lexical"] == pytest.approx(0.6)


def test_rrf_lands_in_unit_interval_with_one_for_top_of_both() -> None:
    fused = fuse([("a", 3.0), ("b", 2.0)], [("a", 0.9), ("c", 0.1)], RRF)
    assert fused[0] == ("a", pytest.approx(1.0))
    assert all(0.0 <= score <= 1.0 for _, score in fused)


def test_ties_are_broken_by_id_for_determinism() -> None:
    assert [d for d, _ in fuse([("b", 1.0), ("a", 1.0)], [], WEIGHTED)] == ["a", "b"]


def test_negative_cosines_count_as_zero() -> None:
    fused = dict(fuse([], [("near", 0.5), ("far", -0.3)], WEIGHTED))
    assert fused["far"] == 0.0 and fused["near"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "mean"},
        {"lexical_weight": -1.0},
        {"lexical_weight": 0.0, "dense_weight": 0.0},
        {"rrf_k": 0},
    ],
)
def test_bad_policies_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidValue):
        FusionPolicy(**kwargs)  # type: ignore[arg-type]


rankings = st.lists(
    st.tuples(st.text(min_size=1, max_size=3), st.floats(-5, 50, allow_nan=False)),
    max_size=20,
    unique_by=lambda item: item[0],
).map(lambda items: sorted(items, key=lambda item: -item[1]))


@given(rankings, rankings, st.sampled_from([WEIGHTED, RRF, FusionPolicy("weighted", 0.2, 0.8)]))
def test_every_fused_score_is_in_unit_interval_and_sorted(lexical, dense, policy) -> None:
    fused = fuse(lexical, dense, policy)
    scores = [score for _, score in fused]
    assert all(0.0 <= s <= 1.0 + 1e-9 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert {d for d, _ in fused} == {d for d, _ in lexical} | {d for d, _ in dense}


def test_calibration_keeps_the_order_and_scales_by_the_confidence() -> None:
    ranked = fuse([("a", 9.0), ("b", 3.0)], [("b", 0.7), ("c", 0.2)], WEIGHTED)
    calibrated = calibrate(ranked, 0.5)
    assert [d for d, _ in calibrated] == [d for d, _ in ranked]
    assert [s for _, s in calibrated] == pytest.approx([s * 0.5 for _, s in ranked])
    assert all(s == 0.0 for _, s in calibrate(ranked, -3.0))


def test_absolute_evidence_from_terms_and_cosines() -> None:
    assert term_coverage(["reading", "files"], "How to read a file.") == 1.0
    assert term_coverage(["zyzzyva", "files"], "How to read a file.") == 0.5
    assert term_coverage([], "anything") == 0.0
    policy = FusionPolicy(dense_floor=0.3, dense_ceiling=0.7)
    assert dense_evidence(0.1, policy) == 0.0
    assert dense_evidence(0.5, policy) == pytest.approx(0.5)
    assert dense_evidence(0.9, policy) == 1.0
