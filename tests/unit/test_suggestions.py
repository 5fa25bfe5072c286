"""Suggested questions from headings: numbering off, junk skipped, a form per heading,
the books taking turns, the same list every time."""

from __future__ import annotations

import pytest

from citadel.domain.suggestions import clean_heading, question_for, suggested_questions


@pytest.mark.parametrize(
    ("heading", "cleaned"),
    [
        ("4.1. if Statements", "if Statements"),
        (
            "2 Simple manipulations; numbers and vectors",
            "Simple manipulations; numbers and vectors",
        ),
        ("Chapter 1. Chapter SLE Systems of Linear Equations", "Systems of Linear Equations"),
        ("Section WILA What is Linear Algebra?", "What is Linear Algebra?"),
        ("A.2 Vectors and assignment", "Vectors and assignment"),
        ("A sample session", "A sample session"),
        ("Contents", ""),
        ("Table of Contents", ""),
        ("Concept index", ""),
        ("Subsection EXC: Exercises", ""),
        ("Preface", ""),
        ("12.3.4", ""),
        ("Introduction and preliminaries", ""),
    ],
)
def test_headings_lose_numbering_and_junk_is_skipped(heading: str, cleaned: str) -> None:
    assert clean_heading(heading) == cleaned


@pytest.mark.parametrize(
    ("heading", "question"),
    [
        ("How to get a Git repository", "How do I get a Git repository?"),
        ("Understanding history: What is a branch?", "What is a branch?"),
        ("Circuit Breakers", "What are Circuit Breakers?"),
        ("The R environment", "What is the R environment?"),
        ("Manipulating branches", "How does manipulating branches work?"),
    ],
)
def test_each_heading_form_asks_its_question(heading: str, question: str) -> None:
    assert question_for(heading)[1] == question


def test_books_take_turns_and_the_list_is_the_same_every_time() -> None:
    books = [
        ("Git User Manual", ["Contents", "How to merge", "How to make a commit", "Ignoring files"]),
        ("Reliable Service Design", ["Reliable Service Design", "Retry Budgets", "Index"]),
    ]
    first = suggested_questions(books)
    assert first == suggested_questions(books)
    assert first[:2] == ["How do I merge?", "What are Retry Budgets?"]
    assert "What is Reliable Service Design?" not in first  # the book's own title
    assert len(first) == 4
    assert len(suggested_questions(books, limit=3)) == 3
