"""The evidence list beside an answer: numbered as the footnotes, cited passages marked,
in the terminal, the web UI's view and the JSON shapes alike."""

from __future__ import annotations

from dataclasses import replace

from citadel.domain.answer import (
    AnswerResult,
    AnswerSegment,
    Degraded,
    DegradedReason,
    GroundedAnswer,
    LinkState,
    attribute,
)
from citadel.domain.manifest import ContextEvidence, freeze_manifest
from citadel.domain.search import Evidence, SearchResult
from citadel.entrypoints.cli.text import answer_text
from citadel.entrypoints.http.presenters import answer_view, footnote_href
from citadel.entrypoints.present.evidence_list import evidence_list, footnote_numbers
from citadel.entrypoints.present.shapes import answer_json, evidence_json
from tests.builders import make_evidence

CHAPTERS = ("1 Basics", "2 Retries", "3 Budgets", "4 Breakers")


def found() -> tuple[Evidence, ...]:
    """Four search results, best first: e1 … e4, each in a chapter of its own."""
    return tuple(
        make_evidence(
            f"e{i}",
            f"Passage {i} says something about retries, in its own words number {i}.",
            chapter=chapter,
            page_label_start=str(10 * i),
            page_label_end=str(10 * i),
            score=1.0 - i / 10,
        )
        for i, chapter in enumerate(CHAPTERS, start=1)
    )


def answered(*cites: tuple[str, ...], evidence: tuple[Evidence, ...] | None = None) -> AnswerResult:
    """An answer whose segments cite the given refs of a manifest of e3, e2, e1 (refs
    E1 = e3, E2 = e2, E3 = e1: the answer's evidence set need not follow search order);
    e4 was found but not given to the generator."""
    results = evidence if evidence is not None else found()
    by_id = {e.evidence_id: e for e in results}
    manifest = freeze_manifest([ContextEvidence(by_id[i]) for i in ("e3", "e2", "e1")])
    segments = [AnswerSegment(f"Segment {n} of the answer.", refs) for n, refs in enumerate(cites)]
    return AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult("how are retries bounded?", results),
        answer=GroundedAnswer("scripted", attribute(segments, manifest)),
        degraded=None,
        manifest=manifest,
    )


def test_the_third_result_cited_first_is_passage_one_and_the_first_result_comes_after() -> None:
    # Segment 0 cites e3 (the third result), segment 1 cites e2 and e3 again.
    result = answered(("E1",), ("E2", "E1"))
    assert footnote_numbers(result.answer) == {"e3": 1, "e2": 2}
    listed = evidence_list(result)
    assert [(p.number, p.evidence.evidence_id, p.cited, p.rank) for p in listed] == [
        (1, "e3", True, 3),
        (2, "e2", True, 2),
        (3, "e1", False, 1),
        (4, "e4", False, 4),
    ]
    assert [p.footnote for p in listed] == [1, 2, None, None]
    assert [p.ref for p in listed] == ["E1", "E2", "E3", None]


def test_the_terminal_numbers_its_evidence_list_as_its_footnote_marks() -> None:
    text = answer_text(answered(("E1",), ("E2", "E1")))
    lines = text.splitlines()
    # Two segments citing one passage share its number.
    assert lines[0].endswith("[1]") and lines[1].endswith("[2][1]")
    cited = [line for line in lines if " cited  " in line]
    assert len(cited) == 2
    assert cited[0].startswith("[1] cited  Reliable Service Design, ch. 3")
    assert cited[0].endswith("p. 30 (no link)")
    assert cited[1].startswith("[2] cited  Reliable Service Design, ch. 2")
    further = lines[lines.index("Further passages:") + 1 :]
    assert further[0].startswith("[3] (0.90) Reliable Service Design, ch. 1")
    assert further[2].startswith("[4] (0.60) Reliable Service Design, ch. 4")
    assert all("cited" not in line for line in further)
    assert "Evidence (2 cited, of 4 passages found):" in lines


def test_the_web_view_links_each_passage_as_its_footnote() -> None:
    result = answered(("E1",), ("E2", "E1"))
    viewer = "/v1/sources/src-1/versions/1/view?chunk=c&token=t"
    segments = tuple(
        replace(
            s,
            citations=tuple(
                replace(c, link_state=LinkState.VIEWER, link_href=viewer) for c in s.citations
            ),
        )
        for s in result.answer.segments  # type: ignore[union-attr]
    )
    result = replace(result, answer=GroundedAnswer("scripted", segments))
    view = answer_view(result, back="/ask?q=x")
    assert [f.number for f in view.footnotes] == [1, 2]
    assert [m.number for m in view.sentences[1].notes] == [2, 1]
    assert [(p.number, p.rank, p.cited) for p in view.passages] == [
        (1, 3, True),
        (2, 2, True),
        (3, 1, False),
        (4, 4, False),
    ]
    for note, passage in zip(view.footnotes, view.passages, strict=False):
        assert passage.href == note.href and passage.label == "view the passage"
    # An uncited passage of the answer's evidence set opens through the same route,
    # resolved on the click; one the generator never saw has no link.
    assert view.passages[2].href == footnote_href("a1", "E3", "/ask?q=x")
    assert view.passages[3].href is None and view.passages[3].label == ""
    assert "/v1/sources/" not in str(view.passages)


def test_a_citation_without_a_link_leaves_its_passage_unlinked() -> None:
    view = answer_view(answered(("E2",)))
    (note,) = view.footnotes
    assert note.href is None
    first = view.passages[0]
    assert first.cited and first.number == 1 and first.href is None
    assert first.label == "no link available"


def test_the_json_results_keep_search_order_and_say_which_the_answer_cites() -> None:
    result = answered(("E1",), ("E2", "E1"))
    shown = answer_json(result)
    rows = shown["search"]["results"]
    assert [r["evidence_id"] for r in rows] == ["e1", "e2", "e3", "e4"]
    assert [(r["number"], r["cited"], r["footnote"]) for r in rows] == [
        (3, False, None),
        (2, True, 2),
        (1, True, 1),
        (4, False, None),
    ]
    # Every field of a search result is still there, unchanged.
    for row, evidence in zip(rows, result.search.results, strict=True):
        assert {k: row[k] for k in evidence_json(evidence)} == evidence_json(evidence)
    # The footnote numbers are the order of first citation in the segments.
    first_seen = [c["evidence_id"] for s in shown["answer"]["segments"] for c in s["citations"]]
    assert list(dict.fromkeys(first_seen)) == ["e3", "e2"]


def test_without_an_answer_the_list_is_the_search_order_and_nothing_is_cited() -> None:
    result = AnswerResult(
        answer_id="a2",
        request_id="r2",
        search=SearchResult("q", found()),
        answer=None,
        degraded=Degraded(DegradedReason.GENERATOR_ERROR, "provider down"),
    )
    rows = answer_json(result)["search"]["results"]
    assert [(r["number"], r["cited"], r["footnote"]) for r in rows] == [
        (1, False, None),
        (2, False, None),
        (3, False, None),
        (4, False, None),
    ]
    assert not any(p.cited for p in answer_view(result).passages)


def test_a_passage_the_reader_may_no_longer_see_is_left_out() -> None:
    result = answered(("E1",), ("E2",))
    hidden = replace(
        result.answer.segments[1].citations[0],  # type: ignore[union-attr]
        evidence_id="",
        source_id="",
        title="",
        chapter="",
        section="",
        pages="",
        link_state=LinkState.FORBIDDEN,
    )
    segments = (result.answer.segments[0], replace(result.answer.segments[1], citations=(hidden,)))  # type: ignore[union-attr]
    result = replace(result, answer=GroundedAnswer("scripted", segments))
    listed = evidence_list(result)
    assert [(p.number, p.evidence.evidence_id) for p in listed] == [(1, "e3"), (3, "e1"), (4, "e4")]
    text = answer_text(result)
    assert "[2] cited  you may not see this source" in text
    assert "Passage 2 says" not in text and "ch. 2" not in text
