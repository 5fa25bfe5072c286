"""Support evaluation: the metrics on known cases, parsing, and a checker's report."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from citadel.app.errors import InvalidRequest
from citadel.app.support_evaluation import (
    LabelledPair,
    auroc,
    evaluate_support,
    parse_pair_lines,
)
from citadel.domain.support import Support, SupportLabel


def test_auroc_known_values() -> None:
    assert auroc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 0.0
    assert auroc([0.5, 0.5, 0.5], [True, False, False]) == 0.5
    assert auroc([0.9, 0.3, 0.5, 0.1], [True, True, False, False]) == 0.75
    assert auroc([0.3], [True]) == 0.5


def test_pairs_parse_from_scifact_or_boolean_lines() -> None:
    pairs = parse_pair_lines(
        [
            '{"claim": "a", "evidence": "b", "label": "SUPPORT"}',
            "",
            '{"segment": "c", "passage": "d", "supported": false}',
            '{"claim": "e", "evidence": "f", "label": "NEI"}',
        ]
    )
    assert pairs == (
        LabelledPair("a", "b", True),
        LabelledPair("c", "d", False),
        LabelledPair("e", "f", False),
    )
    for bad in ("[1]", "{", '{"claim": "a", "evidence": "b"}', '{"claim": 1, "evidence": "b"}'):
        with pytest.raises(InvalidRequest, match="line 1"):
            parse_pair_lines([bad])
    with pytest.raises(InvalidRequest, match="no pairs"):
        parse_pair_lines(["  "])


class Fixed:
    """Scores a pair by the length of its segment; 'supported' from length 3."""

    name = "fixed/1"

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[Support]:
        out = []
        for segment, _ in pairs:
            score = min(len(segment) / 4, 0.99)
            label = SupportLabel.SUPPORTED if len(segment) >= 3 else SupportLabel.UNSUPPORTED
            out.append(Support(score, label))
        return out


def test_a_report_counts_what_the_checker_said() -> None:
    pairs = [
        LabelledPair("aaaa", "p", True),
        LabelledPair("aaa", "p", True),
        LabelledPair("aa", "p", True),
        LabelledPair("aaa", "p", False),
        LabelledPair("a", "p", False),
    ]
    seen: list[int] = []
    report = evaluate_support(Fixed(), pairs, progress=lambda done, _: seen.append(done))
    assert seen == [1, 2, 3, 4, 5]
    assert report.checker == "fixed/1"
    assert (report.pairs, report.positives) == (5, 3)
    assert report.recall == pytest.approx(2 / 3)
    assert report.precision == pytest.approx(2 / 3)
    assert report.balanced_accuracy == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert report.auroc == pytest.approx((2 + 1.5 + 1) / 6)
    assert report.labels == {"verbatim": 0, "supported": 3, "partial": 0, "unsupported": 2}
    assert 0 <= report.ms_per_pair_p50 <= report.ms_per_pair_p95
