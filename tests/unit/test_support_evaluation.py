"""Support evaluation: the metrics on known cases, parsing, and a checker's report."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from citadel.app.errors import InvalidRequest
from citadel.app.ports.support import JudgeBudget
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
        LabelledPair("a", "b", "SUPPORT"),
        LabelledPair("c", "d", "NOT_SUPPORT"),
        LabelledPair("e", "f", "NEI"),
    )
    assert [p.supported for p in pairs] == [True, False, False]
    for bad in ("[1]", "{", '{"claim": "a", "evidence": "b"}', '{"claim": 1, "evidence": "b"}'):
        with pytest.raises(InvalidRequest, match="line 1"):
            parse_pair_lines([bad])
    with pytest.raises(InvalidRequest, match="no pairs"):
        parse_pair_lines(["  "])


class Fixed:
    """Scores a pair by the length of its segment; 'supported' from length 3."""

    name = "fixed/1"

    def check(
        self, pairs: Sequence[tuple[str, str]], *, budget: JudgeBudget | None = None
    ) -> list[Support]:
        out = []
        for segment, _ in pairs:
            score = min(len(segment) / 4, 0.99)
            label = SupportLabel.SUPPORTED if len(segment) >= 3 else SupportLabel.UNSUPPORTED
            out.append(Support(score, label))
        return out


def test_a_report_counts_what_the_checker_said() -> None:
    pairs = [
        LabelledPair("aaaa", "p", "SUPPORT"),
        LabelledPair("aaa", "p", "SUPPORT"),
        LabelledPair("aa", "p", "SUPPORT"),
        LabelledPair("aaa", "p", "NEI"),
        LabelledPair("a", "p", "CONTRADICT"),
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
    assert report.labels == {
        "verbatim": 0,
        "supported": 3,
        "partial": 0,
        "unsupported": 2,
        "contradicted": 0,
    }
    assert 0 <= report.ms_per_pair_p50 <= report.ms_per_pair_p95
    assert report.by_kind == {}, "no pair has a kind"


WRITTEN = (
    '{"id": "r-intro-s00001", "book": "r-intro", "chunk_id": "c1", "passage": "P",'
    ' "sentence": "%s", "label": "%s", "kind": "%s", "origin": "written"}'
)


def written(sentence: str, label: str, kind: str) -> str:
    return WRITTEN % (sentence, label, kind)


def test_the_projects_written_pairs_parse_with_their_kind() -> None:
    (pair,) = parse_pair_lines([written("s", "CONTRADICT", "negation")])
    assert pair == LabelledPair("s", "P", "CONTRADICT", "negation")
    assert not pair.supported


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (written("s", "support", "x"), "line 2 (r-intro-s00001): label must be SUPPORT"),
        (written("s", "SUPPORT", ""), "kind must be a non-empty string"),
        ('{"sentence": "s", "passage": "p", "label": "NEI", "kind": 3}', "kind must be"),
        ('{"sentence": 1, "passage": "p", "label": "NEI"}', "needs the text of segment"),
        ('{"sentence": "s", "label": "NEI"}', "and of passage"),
        ('{"claim": "s", "evidence": "p", "supported": "yes"}', "true or false"),
        ('{"claim": "s", "evidence": "p", "label": "NEI", "supported": true}', "disagree"),
    ],
)
def test_a_bad_line_is_refused_with_its_number_and_why(line: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=re.escape(message)) as caught:
        parse_pair_lines(['{"claim": "a", "evidence": "b", "label": "SUPPORT"}', line])
    assert str(caught.value).startswith("line 2")


class ByText:
    """Labels each segment as its text says: the segment is the label's name."""

    name = "bytext/1"

    def check(
        self, pairs: Sequence[tuple[str, str]], *, budget: JudgeBudget | None = None
    ) -> list[Support]:
        out = []
        for segment, _ in pairs:
            label = SupportLabel(segment.split(":")[0])
            score = {"verbatim": 1.0, "supported": 0.9, "partial": 0.5}.get(label.value, 0.1)
            span = (0, 1) if label is SupportLabel.VERBATIM else None
            out.append(Support(score, label, span))
        return out


def test_the_confusion_and_the_figures_per_gold_label_and_kind() -> None:
    lines = [
        written("verbatim:1", "SUPPORT", "paraphrase"),
        written("supported:2", "SUPPORT", "paraphrase"),
        written("partial:3", "SUPPORT", "summary"),
        written("contradicted:4", "CONTRADICT", "negation"),
        written("supported:5", "CONTRADICT", "negation"),
        written("unsupported:6", "CONTRADICT", "value"),
        written("partial:7", "NEI", "added_specific"),
        written("unsupported:8", "NEI", "off_target"),
    ]
    report = evaluate_support(ByText(), parse_pair_lines(lines))
    assert list(report.confusion) == ["SUPPORT", "CONTRADICT", "NEI"]
    assert report.confusion["CONTRADICT"] == {
        "verbatim": 0,
        "supported": 1,
        "partial": 0,
        "unsupported": 1,
        "contradicted": 1,
    }
    assert report.confusion["SUPPORT"]["partial"] == 1
    # Right: SUPPORT 2 of 3, CONTRADICT 1 of 3, NEI 2 of 2.
    assert report.three_way_balanced_accuracy == pytest.approx((2 / 3 + 1 / 3 + 1) / 3)
    contradict = report.by_gold["CONTRADICT"]
    assert contradict.pairs == 3 and contradict.supported_share == pytest.approx(1 / 3)
    # SUPPORT's 3 scores (1.0, 0.9, 0.5) against CONTRADICT's (0.1, 0.9, 0.1).
    assert contradict.auroc == pytest.approx((3 + 2.5 + 2) / 9)
    assert set(report.by_kind) == {
        "paraphrase",
        "summary",
        "negation",
        "value",
        "added_specific",
        "off_target",
    }
    negation = report.by_kind["negation"]
    assert negation.gold == {"CONTRADICT": 2} and negation.right == 0.5
    paraphrase = report.by_kind["paraphrase"]
    assert paraphrase.right == 1.0 and paraphrase.supported_share == 1.0
    # A SUPPORT kind ranks against every pair of the other class: 5 negatives.
    assert paraphrase.auroc == pytest.approx((5 + 4.5) / 10)
