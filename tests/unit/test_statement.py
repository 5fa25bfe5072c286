"""Whether a text states anything (``domain/statement.py``), and the two rules built on
it: ``verbatim`` needs a quotation that is a sentence or a code line, and validation
refuses a segment that states nothing (numbers alone, no content word)."""

from __future__ import annotations

import time

import pytest

from citadel.adapters.generators.scripted import ScriptedGenerator
from citadel.adapters.support import lexical_checker
from citadel.domain.answer import DegradedReason, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.quotation import find_quotation, verbatim_span
from citadel.domain.statement import (
    asserts_nothing,
    content_words,
    is_code_line,
    is_statement,
    is_title,
    states_something,
)
from citadel.domain.support import SupportLabel, SupportPolicy
from citadel.domain.validation import Accepted, Rejection, RejectionReason, validate_candidate
from tests.unit.test_answer_support import ask, build
from tests.unit.test_validation import MANIFEST, one, seg

SENTENCE = "Git stores a snapshot of every file in the commit."
CODE = "x <- c(1, 2)"

# (text, states something (validation's floor), is a statement (verbatim's))
CASES = [
    ("12", False, False),
    ("x", False, False),
    ("the", False, False),
    ("1.2", False, False),
    ("2 1.3", False, False),
    ("...", False, False),
    ("50 MB", False, False),
    ("12 ms, 3.5 s", False, False),
    ("[1] 2 3", False, False),
    ("1 + 2", False, False),
    ("I am.", False, False),
    ("e.g.", False, False),
    ("lapply", True, False),  # one identifier: a word, not a statement
    ("ls()", True, False),
    ("version 2.7", True, False),
    ("the working directory", True, False),
    ("It is fast.", True, False),
    (CODE, True, True),
    ('git commit -m "Fix the build"', True, True),
    ("df$height[df$age > 20]", True, True),
    ("SELECT name FROM users;", True, True),
    ("for (i in 1:10) print(i)", True, True),
    ("> x", True, True),  # a prompt line: R prints x
    (">>> 2 + 2", True, True),
    ("$ git status", True, True),
    ("> 12", False, False),
    ("$ 5", False, False),
    (SENTENCE, True, True),
    ("The trial ran from 2001 to 2005", True, True),
    ("Commits are snapshots.", True, False),  # 2 content words in 3 words
    ("Commits record snapshots.", True, True),
    ("Python lists are mutable.", True, True),
    # Headings and titles quoted from their passage state nothing (issue 28's written
    # failure rows: 13 of 100 headings were `verbatim` before the rule).
    ("Recall and correction of previous commands", True, False),
    ("12.3. Class Groups and Units, bnf", True, False),
    ("Mapping Types — dict", True, False),
    ("Hershey vector fonts", True, False),
    ("2.6 Character vectors", True, False),
    ("Recall and correction of previous commands.", True, True),  # punctuated: a sentence
    ("mfrow=c(2, 4)", True, True),  # a code line, however short
    ("Use the -m option to give the message", True, True),
    ("git fetch origin", True, True),  # lower case: a command, not a title
    # Found attacking the rule: heading markers, colons, questions, other sentence ends.
    ("Installing Git on Linux:", True, False),
    ("Why Use Version Control Systems?", True, False),
    ("How does git store the history of a project?", True, False),
    ("(a) Routine Vacuuming of Tables", True, False),
    ("1) Installing the Package Manager", True, False),
    ("§ 3.2 Class Groups and Units", True, False),
    ("2005 saw the release of Git", True, True),  # a bare number is no section number
    ("2 files changed, 3 insertions", True, True),
    ("Python lists are mutable…", True, True),
    ("Git stores every snapshot。", True, True),
]


def test_a_markdown_heading_is_no_statement() -> None:
    # (validation refuses a Markdown heading marker before the statement rule is asked)
    assert not is_statement("## Installing Git on Linux")


@pytest.mark.parametrize(("text", "something", "statement"), CASES)
def test_the_hostile_cases(text: str, something: bool, statement: bool) -> None:
    assert states_something(text) is something
    assert is_statement(text) is statement
    assert not statement or something, "a statement always states something"


def test_content_words_leave_out_numbers_units_letters_and_stop_words() -> None:
    assert content_words("The 12 ms default of x is 30 s in Git 2.7") == ["default", "git"]
    assert content_words("x86 and v2 are names") == ["x86", "v2", "names"]
    assert content_words("Größe und Länge") == ["grösse", "und", "länge"]  # case-folded


def test_a_code_line_needs_punctuation_an_identifier_and_two_tokens() -> None:
    assert is_code_line(CODE) and is_code_line("a = 1") and is_code_line("f(x)")
    assert not is_code_line("x") and not is_code_line("ls()") and not is_code_line("= 5")
    assert not is_code_line("(1, 2)") and not is_code_line("git status")
    assert not is_code_line("It is fast; it is small.")
    # A code block quoted with the line before it: one code line is enough.
    assert is_statement("Then:\n" + CODE)


PASSAGE = (
    "Vectors are built with c(). For example\n    x <- c(1, 2)\nmakes a vector of 12"
    " elements? No: of 2 elements, 1.2 and 2 1.3 are not in it."
)


@pytest.mark.parametrize(
    ("segment", "verbatim"),
    [
        ("12", False),
        ("2 1.3", False),
        ("1.2", False),
        ("Vectors", False),
        ("x", False),
        (CODE, True),
        ("Vectors are built with c().", True),
    ],
)
def test_verbatim_needs_a_quotation_that_states_something(segment: str, verbatim: bool) -> None:
    assert find_quotation(segment, PASSAGE) is not None, "every case occurs in the passage"
    assert (verbatim_span(segment, PASSAGE) is not None) is verbatim
    (support,) = lexical_checker().check([(segment, PASSAGE)])
    assert (support.label is SupportLabel.VERBATIM) is verbatim, support
    if not verbatim:
        assert support.span is None and support.score < 1.0


@pytest.mark.parametrize("text", [text for text, something, _ in CASES if not something])
def test_validation_refuses_a_segment_that_states_nothing(text: str) -> None:
    verdict = validate_candidate({"segments": [seg(SENTENCE), seg(text)]}, MANIFEST, Limits())
    assert isinstance(verdict, Rejection), text
    assert verdict.segment == 1
    expected = RejectionReason.NO_WORDS if text == "..." else RejectionReason.STATES_NOTHING
    assert verdict.reason is expected
    assert "states nothing" in verdict.detail or expected is RejectionReason.NO_WORDS


@pytest.mark.parametrize("text", [text for text, something, _ in CASES if something])
def test_validation_accepts_a_segment_that_states_something(text: str) -> None:
    assert isinstance(validate_candidate(one(text), MANIFEST, Limits()), Accepted), text


def numbers_only(request: GenerationRequest) -> object:
    refs = [e.ref for e in request.evidence]
    return {
        "segments": [
            {"text": "1.2", "evidence_ids": [refs[0]]},
            {"text": "50", "evidence_ids": [refs[1]]},
            {"text": "2 1.3", "evidence_ids": [refs[0]]},
        ]
    }


def quote_first(request: GenerationRequest) -> object:
    first = request.evidence[0]
    return {"segments": [{"text": first.passage, "evidence_ids": [first.ref]}]}


def test_an_answer_of_numbers_is_invalid_output_after_its_repair() -> None:
    generator = ScriptedGenerator([numbers_only, numbers_only])
    svc, metrics, _ = build(generator, SupportPolicy.LABEL)
    result = ask(svc)
    assert generator.calls == 2, "the one bounded repair, as for any other rejection"
    assert "states_nothing" in generator.requests[1].repair
    assert result.answer is None and result.degraded is not None
    assert result.degraded.reason is DegradedReason.INVALID_OUTPUT
    assert "states_nothing" in result.degraded.detail and "segment 1" in result.degraded.detail
    assert metrics.rejections["states_nothing"] == 2
    assert result.search.results, "the reader gets the search results"


def test_a_repair_that_states_something_is_shown() -> None:
    generator = ScriptedGenerator([numbers_only, quote_first])
    svc, _, _ = build(generator, SupportPolicy.LABEL)
    result = ask(svc)
    assert result.answer is not None and result.degraded is None
    assert [s.label for s in result.answer.segments] == [SupportLabel.VERBATIM]
    assert result.generation is not None and result.generation.attempts == 2


def test_the_extractive_generator_quotes_no_unit_that_states_nothing() -> None:
    from tests.unit.test_extractive_generator import answer, texts

    # Without the rule it quotes this sentence (one content word, "retried"): a quotation
    # that would not be verbatim, and a quoting generator's other segments are dropped.
    assert texts(answer("When is it retried again?", "Then it is retried again and again.")) == []
    passage = "A retry budget bounds the attempts. Then it is retried again and again."
    quoted = texts(answer("When is it retried again?", passage))
    assert "Then it is retried again and again." not in quoted
    assert all(is_statement(text) for text in quoted)


@pytest.mark.parametrize("piece", ["a.", "_.", "a_", " -a", "$a", "a="])
def test_the_rule_takes_linear_time_on_hostile_text(piece: str) -> None:
    # A quadratic scan (each start of a long identifier rescanned) took ~0.3 s at 4,000
    # characters, over a second at 8,000; linear, it is a few milliseconds.
    text = piece * (8000 // len(piece))
    started = time.perf_counter()
    states_something(text)
    is_statement(text)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Using the Python Interpreter", True),
        ("2.1. Invoking the Interpreter", True),
        ("## Branches", True),
        ("Installing Git on Linux:", True),
        ("Using the Python Interpreter.", False),  # a sentence's end
        ("using the python interpreter", False),  # lower case: left to the other rules
        ("Recall and correction of the previous seven commands", False),  # seven words
        ("X <- read.table(file)", False),  # a code line
        ("Which object names blobs?", False),  # a question, not a title
    ],
)
def test_a_title_is_short_unpunctuated_capitalised_or_numbered_and_no_code(
    text: str, title: bool
) -> None:
    assert is_title(text) is title
    if title:
        assert not is_statement(text)


def test_a_question_and_a_title_assert_nothing_a_sentence_does() -> None:
    assert asserts_nothing("Which object names blobs?")
    assert asserts_nothing("Blob Objects")
    assert not asserts_nothing("Trees name blobs.")
