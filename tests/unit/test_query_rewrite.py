"""The deterministic follow-up rewrite, the conversation values, and the rewrite's place
in the audit record."""

from __future__ import annotations

from dataclasses import replace

import pytest

from citadel.domain.audit import AuditRecord, answer_record
from citadel.domain.conversation import MAX_TITLE_CHARS, title_of
from citadel.domain.errors import InvalidValue
from citadel.domain.rewrite import (
    PreviousTurn,
    QueryRewrite,
    RewriteKind,
    follow_up,
    leans_on_context,
)
from citadel.domain.users import Actor
from tests.conversation_builders import answered

PREVIOUS = PreviousTurn(
    question="How do I create a numeric vector in R?",
    query="How do I create a numeric vector in R?",
    answer_text="Use the c function: c(1, 2, 3) makes a numeric vector; vector() too.",
)


def test_a_first_question_runs_as_asked() -> None:
    rewrite = follow_up("How do I create a vector?", None)
    assert rewrite == QueryRewrite.as_asked("How do I create a vector?")
    assert not rewrite.rewritten


def test_a_pronoun_led_follow_up_borrows_the_previous_terms() -> None:
    rewrite = follow_up("How do I sort it?", PREVIOUS)
    assert rewrite.kind is RewriteKind.DETERMINISTIC
    assert rewrite.query.startswith("How do I sort it? ")
    added = rewrite.query.removeprefix("How do I sort it? ").split()
    assert added[:3] == ["create", "numeric", "vector"]
    assert "R" not in added, "one-letter words are not salient"
    assert rewrite.question == "How do I sort it?"
    assert rewrite.rewritten


def test_a_short_follow_up_borrows_them_too_and_words_it_has_are_not_repeated() -> None:
    rewrite = follow_up("what about vector length?", PREVIOUS)
    assert rewrite.kind is RewriteKind.DETERMINISTIC
    assert rewrite.query.split().count("vector") == 1
    assert "numeric" in rewrite.query


def test_the_answers_repeated_words_follow_the_query_terms() -> None:
    previous = PreviousTurn("Sorting?", "Sorting?", "order sorts; order returns indices; rank")
    rewrite = follow_up("and descending?", previous)
    assert rewrite.query == "and descending? Sorting order"


def test_a_question_that_stands_alone_is_not_rewritten() -> None:
    question = "How are missing values represented in data frames imported from CSV files?"
    assert not leans_on_context(question)
    assert follow_up(question, PREVIOUS) == QueryRewrite.as_asked(question)


def test_nothing_to_borrow_leaves_the_question_as_asked() -> None:
    previous = PreviousTurn("it?", "it?", "")
    assert follow_up("and that?", previous).kind is RewriteKind.NONE


def test_a_query_has_text() -> None:
    with pytest.raises(InvalidValue):
        QueryRewrite("q", "  ")


def test_a_title_is_the_first_question_on_one_line_cut_at_a_word() -> None:
    assert title_of("What is\n a  vector?") == "What is a vector?"
    long = " ".join(["word"] * 60)
    title = title_of(long)
    assert len(title) <= MAX_TITLE_CHARS and title.endswith("word…")


def test_the_rewrite_is_in_the_audit_record_and_reads_back() -> None:
    rewrite = QueryRewrite("and its default?", "and its default? retry", RewriteKind.MODEL)
    result = replace(answered("a1"), rewrite=rewrite)
    record = answer_record(result, Actor("ada", "acme"), "2026-01-01T00:00:00+00:00")
    body = record.to_json()
    assert '"rewrite":{"kind":"model","query":"and its default? retry"' in body
    assert AuditRecord.from_json(body).rewrite == rewrite
    assert AuditRecord.from_json(body).to_json() == body


def test_a_record_without_a_conversation_keeps_its_bytes() -> None:
    record = answer_record(answered("a1"), Actor("ada", "acme"), "2026-01-01T00:00:00+00:00")
    assert '"rewrite"' not in record.to_json()
    assert AuditRecord.from_json(record.to_json()).rewrite is None
