"""The renderable-text rule: every hostile form refused in model-written text, ordinary
technical prose accepted, and a verbatim quotation of a cited passage let through."""

from __future__ import annotations

import pytest

from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence, freeze_manifest
from citadel.domain.renderable import Renderable, renderable_form
from citadel.domain.validation import Accepted, Rejection, check_display_text, validate_candidate
from tests.builders import make_evidence
from tests.hostile_texts import HOSTILE, HTML_MANUAL, PROSE, Hostile


def manifest(passage: str = "A retry policy caps attempts."):
    return freeze_manifest([ContextEvidence(make_evidence("evidence-1", passage))])


def one(text: str) -> dict[str, object]:
    return {"segments": [{"text": text, "evidence_ids": ["E1"]}]}


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda h: h.name)
def test_model_written_hostile_text_is_refused_with_its_reason(hostile: Hostile) -> None:
    verdict = validate_candidate(one(hostile.text), manifest(), Limits())
    assert isinstance(verdict, Rejection), hostile
    assert verdict.reason.value == hostile.reason


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_technical_prose_is_accepted(text: str) -> None:
    assert renderable_form(text) is None, text
    assert check_display_text(text, Limits()) is None
    assert isinstance(validate_candidate(one(text), manifest(), Limits()), Accepted)


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("evil.example/collect?d=1", Renderable.LINK),
        ("a.b.evil.com", Renderable.LINK),
        ("x@y.example", Renderable.LINK),
        ("https:\\\\evil", Renderable.LINK),
        ("&ampx", Renderable.MARKUP),
        ("&#x3csvg", Renderable.MARKUP),
        ("  ## heading", Renderable.MARKUP),
        ("title\n---", Renderable.MARKUP),
        ("setup.py", None),
        ("main.rs and lib.rs", None),
        ("#hashtag", None),
        ("a\n\n---", None),  # a thematic break under a blank line: no heading
    ],
)
def test_each_form_is_named(text: str, form: Renderable | None) -> None:
    assert renderable_form(text) is form


def test_a_verbatim_quotation_of_a_cited_passage_may_hold_markup() -> None:
    # An HTML manual's example is the book's text: quotable as the book prints it.
    passage = f"Links are elements. {HTML_MANUAL} The browser shows the text."
    accepted = validate_candidate(one(HTML_MANUAL), manifest(passage), Limits())
    assert isinstance(accepted, Accepted)
    assert accepted.segments[0].text == HTML_MANUAL


def test_quoting_needs_the_passage_cited() -> None:
    # The same words cited to a passage that does not hold them are the model's.
    verdict = validate_candidate(one(HTML_MANUAL), manifest(), Limits())
    assert isinstance(verdict, Rejection) and verdict.reason.value == "url_in_text"
    # Passages given by ref (as the audit replay gives the stored ones) count alike.
    passages = {"E1": HTML_MANUAL}
    assert isinstance(
        validate_candidate(one(HTML_MANUAL), manifest(), Limits(), passages), Accepted
    )


def test_a_quotation_is_still_held_to_the_other_checks() -> None:
    passage = "Press \x1b]8;;https://evil.example\x1b\\ here to go."
    verdict = validate_candidate(one(passage), manifest(passage), Limits())
    assert isinstance(verdict, Rejection) and verdict.reason.value == "control_character"


def test_model_text_that_adds_to_a_quotation_is_refused() -> None:
    passage = f"Links are elements. {HTML_MANUAL}"
    text = HTML_MANUAL + " Then visit evil.example/x."
    verdict = validate_candidate(one(text), manifest(passage), Limits())
    assert isinstance(verdict, Rejection) and verdict.reason.value == "url_in_text"
