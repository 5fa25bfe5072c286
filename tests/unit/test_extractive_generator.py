"""The extractive generator answers: whole units only, code kept as code, the best passage
first, weak sections left out, nothing said twice, and every segment its passage's own text."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.extractive.units import quotable_units
from citadel.app.ports import Vectors
from citadel.domain.answer import GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence, PromptEvidence, freeze_manifest
from citadel.domain.validation import Accepted, validate_candidate
from tests.builders import make_evidence
from tests.fakes.relevance import TableRelevance


def evidence(*passages: str, sections: Sequence[str] = ()) -> tuple[PromptEvidence, ...]:
    return tuple(
        PromptEvidence(
            ref=f"E{i}",
            passage=passage,
            title="A Book",
            author="",
            chapter="",
            section=sections[i - 1] if i <= len(sections) else "",
            pages="",
        )
        for i, passage in enumerate(passages, start=1)
    )


def answer(
    question: str,
    *passages: str,
    generator: ExtractiveGenerator | None = None,
    sections: Sequence[str] = (),
) -> list[dict[str, object]]:
    request = GenerationRequest(
        question=question, evidence=evidence(*passages, sections=sections), max_output_tokens=512
    )
    candidate = asyncio.run((generator or ExtractiveGenerator()).generate(request))
    assert isinstance(candidate.payload, dict)
    segments = candidate.payload["segments"]
    assert isinstance(segments, list)
    assert_valid(segments, passages)
    return segments


def normalised(text: str) -> str:
    return " ".join(text.split())


def assert_valid(segments: list[dict[str, object]], passages: Sequence[str]) -> None:
    """Each segment cites one passage and is its text modulo whitespace runs; the
    validator accepts the whole answer."""
    for segment in segments:
        cited = segment["evidence_ids"]
        assert isinstance(cited, list) and len(cited) == 1
        passage = passages[int(str(cited[0])[1:]) - 1]
        assert normalised(str(segment["text"])) in normalised(passage), (segment, passage)
    if segments:
        manifest = freeze_manifest(
            tuple(
                ContextEvidence(make_evidence(f"evidence-{i}", p, section=f"s{i}"))
                for i, p in enumerate(passages, start=1)
            )
        )
        verdict = validate_candidate({"segments": segments}, manifest, Limits())
        assert isinstance(verdict, Accepted), (segments, verdict)


def texts(segments: list[dict[str, object]]) -> list[str]:
    return [str(s["text"]) for s in segments]


def refs(segments: list[dict[str, object]]) -> list[str]:
    cited = [s["evidence_ids"] for s in segments]
    return [str(r) for refs in cited if isinstance(refs, list) for r in refs]


# -- whole sentences only ---------------------------------------------------------------


def test_a_passage_cut_mid_sentence_quotes_neither_its_head_nor_its_tail() -> None:
    passage = (
        "of the retry budget before the caller gives up on the request. "
        "A retry budget bounds how many retry attempts a client may spend. "
        "Each retry attempt spends part of the budget the caller sets, and when the"
    )
    quoted = texts(answer("How does a retry budget bound retry attempts?", passage))
    assert quoted == ["A retry budget bounds how many retry attempts a client may spend."]


def test_a_sentence_that_continues_after_a_code_line_is_not_quoted_alone() -> None:
    passage = (
        "Create the branch with, for example,\n\n$ git branch topic\n\n"
        "which makes a new branch topic without switching to it."
    )
    units = [u.text for u in quotable_units(passage)]
    assert "which makes a new branch topic without switching to it." not in units
    assert "Create the branch with, for example,\n$ git branch topic" in units
    assert "$ git branch topic" in units


def test_a_pdf_line_break_inside_a_sentence_is_one_space() -> None:
    passage = (
        "When an element of a vector is not available, a place within it may be reserved\n"
        "for it by assigning it the special value NA. The end of it is near."
    )
    unit, _ = quotable_units(passage)
    assert unit.text == (
        "When an element of a vector is not available, a place within it may be reserved "
        "for it by assigning it the special value NA."
    )
    assert passage[unit.start : unit.end].replace("\n", " ") == unit.text


# -- code --------------------------------------------------------------------------------

VENV = (
    "The module used to create and manage virtual environments is called venv.\n\n"
    "To create a virtual environment, decide upon a directory where you want to place it, "
    "and run the venv module as a script with the directory path:\n\n"
    "python -m venv tutorial-env\n\n"
    "This will create the tutorial-env directory if it doesn't exist."
)


def test_the_command_that_creates_a_virtual_environment_is_quoted() -> None:
    quoted = texts(answer("How do I create a virtual environment?", VENV))
    assert any(t.endswith("\npython -m venv tutorial-env") for t in quoted), quoted


def test_a_short_code_block_keeps_its_line_breaks() -> None:
    passage = (
        "Start the worker pool and wait for it:\n\n"
        "    pool = Pool(4)\n    pool.start()\n    pool.join()\n\n"
        "The pool stops when every worker has finished."
    )
    units = [u for u in quotable_units(passage) if u.code]
    assert "pool = Pool(4)\npool.start()\npool.join()" in [u.text for u in units]
    quoted = texts(answer("How do I start the worker pool and wait for it?", passage))
    assert any("pool = Pool(4)\npool.start()\npool.join()" in t for t in quoted), quoted


def test_r_prompt_lines_in_pdf_text_are_code_units() -> None:
    passage = (
        "The function is.na(x) gives a logical vector of the same size as x with value\n"
        "TRUE if and only if the corresponding element in x is NA.\n"
        "> z <- c(1:3,NA); ind <- is.na(z)\n"
        "Notice that the logical expression x == NA is quite different from is.na(x)."
    )
    units = quotable_units(passage)
    code = [u.text for u in units if u.code]
    assert "> z <- c(1:3,NA); ind <- is.na(z)" in code
    quoted = texts(answer("How do I test which elements are missing with is.na?", passage))
    assert any("is.na(x)" in t for t in quoted), quoted


def test_a_code_line_the_validator_would_refuse_is_skipped() -> None:
    passage = (
        "Print the thread to see its state and name.\n\n"
        ">>> print(worker)\n<Thread(worker 1, started 123145)>\n\n"
        "The worker thread prints its name and state when started."
    )
    quoted = texts(answer("How do I see the state of a worker thread?", passage))
    assert quoted and not any("<Thread" in t for t in quoted)


# -- choice --------------------------------------------------------------------------------

RETRY = (
    "A retry budget bounds the retry attempts a client may make. "
    "Every retry attempt spends part of the retry budget that the caller sets. "
    "When the retry budget is spent, the client stops retrying and reports the failure."
)
WEAK = "Logging levels decide which messages are written. A client may log each attempt."


def test_a_weakly_related_section_is_left_out_rather_than_filling_a_slot() -> None:
    segments = answer("How does a retry budget bound retry attempts?", RETRY, WEAK)
    assert set(refs(segments)) == {"E1"}
    assert len(segments) >= 2  # several sentences from the passage that answers


def test_the_passage_that_answers_is_cited_first() -> None:
    segments = answer("How does a retry budget bound retry attempts?", WEAK, RETRY)
    assert refs(segments)[0] == "E2"
    assert "E1" not in refs(segments)


def test_the_same_sentence_in_two_overlapping_chunks_is_quoted_once() -> None:
    shared = "A retry budget bounds the retry attempts a client may make."
    first = "Clients retry failed calls. " + shared
    second = shared + " Budgets are set per caller and per retry window."
    quoted = texts(answer("How does a retry budget bound the retry attempts?", first, second))
    assert quoted.count(shared) == 1


def test_two_sentences_that_say_the_same_are_not_both_quoted() -> None:
    passage = (
        "A retry budget bounds the retry attempts a client may make. "
        "The retry attempts a client may make are bounded by a retry budget. "
        "A retry budget bounds the retry attempts that a client may make!"
    )
    quoted = texts(answer("How does a retry budget bound retry attempts?", passage))
    assert len(quoted) == 1, quoted


class TableEmbedder:
    """Vectors by hand: every text is near the question unless it is listed as far."""

    name = "table"
    dimension = 2

    def __init__(self, near: Sequence[str]) -> None:
        self._near = near
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        rows = [[1.0, 0.0] if any(n in t for n in self._near) else [0.0, 1.0] for t in texts]
        return np.asarray(rows, dtype=np.float32)


def test_the_embedder_finds_the_sentence_that_shares_no_word_with_the_question() -> None:
    question = "How can I undo my last commit?"
    meaning = "To throw away the most recent change, reset the branch to its parent."
    words = "Every commit records who made the commit and when the commit was made."
    embedder = TableEmbedder(near=[question, meaning])
    generator = ExtractiveGenerator(embedder=embedder)
    quoted = texts(answer(question, f"{words} {meaning}", generator=generator))
    assert quoted[0] == meaning and words not in quoted
    assert embedder.calls == 1
    # Without an embedder the choice is by words alone.
    assert texts(answer(question, f"{words} {meaning}")) == [words]


class FailingEmbedder:
    name = "failing"
    dimension = 2

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise RuntimeError("model unavailable")


def test_an_embedder_that_fails_falls_back_to_words() -> None:
    generator = ExtractiveGenerator(embedder=FailingEmbedder())
    segments = answer(
        "How does a retry budget bound retry attempts?", RETRY, WEAK, generator=generator
    )
    assert segments and set(refs(segments)) == {"E1"}


def test_the_hashing_embedder_works_too() -> None:
    generator = ExtractiveGenerator(embedder=HashingEmbedder())
    segments = answer(
        "How does a retry budget bound retry attempts?", RETRY, WEAK, generator=generator
    )
    assert segments and refs(segments)[0] == "E1"


def test_the_prompt_version_names_this_choice_and_the_scorer_weights() -> None:
    assert ExtractiveGenerator().prompt_version == "extractive/5"
    scored = ExtractiveGenerator(relevance=TableRelevance())
    assert scored.prompt_version == "extractive/5+table-relevance/1"


# -- the relevance scorer ------------------------------------------------------------------

DEFINES_NA = "Missing values are marked NA, and is.na(x) tells which elements are missing."
MENTIONS_NA = "The missing values of the survey were many, as the table of values shows."
ASIDE = "Missing values also appear in the plots, where the values are left out."


def test_the_scorer_picks_the_sentence_that_answers_over_the_one_that_shares_words() -> None:
    question = "How are missing values represented and tested for?"
    passage = f"{MENTIONS_NA} {DEFINES_NA}"
    # By words alone the sentence with more shared words wins.
    assert texts(answer(question, passage))[0] == MENTIONS_NA
    scorer = TableRelevance({"is.na": 0.9, "survey": 0.05})
    quoted = texts(answer(question, passage, generator=ExtractiveGenerator(relevance=scorer)))
    assert quoted == [DEFINES_NA]  # and the one that answers nothing is not quoted beside it
    assert scorer.calls and scorer.calls[0][0] == question


def test_the_answer_stops_where_the_scorer_says_the_next_unit_does_not_answer() -> None:
    question = "How are missing values represented and tested for?"
    passage = f"{DEFINES_NA} {ASIDE}"
    answering = TableRelevance({"is.na": 0.9, "plots": 0.6})
    assert texts(answer(question, passage, generator=ExtractiveGenerator(relevance=answering))) == [
        DEFINES_NA,
        ASIDE,
    ]
    stopping = TableRelevance({"is.na": 0.9, "plots": 0.1})
    assert texts(answer(question, passage, generator=ExtractiveGenerator(relevance=stopping))) == [
        DEFINES_NA
    ]


class FailingRelevance:
    name = "failing-relevance/1"

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        raise RuntimeError("model unavailable")


def test_a_scorer_that_fails_falls_back_to_words() -> None:
    question = "How are missing values represented and tested for?"
    passage = f"{MENTIONS_NA} {DEFINES_NA}"
    generator = ExtractiveGenerator(relevance=FailingRelevance())
    assert texts(answer(question, passage, generator=generator)) == texts(answer(question, passage))


# -- every segment is its passage's text ---------------------------------------------------

SENTENCES = st.sampled_from(
    [
        "A retry budget bounds the retry attempts a client may make.",
        "Backoff spaces the attempts so that a service can recover (see Section 2.1).",
        'The "reflog" keeps every previous value of each branch.',
        "e.g. a worker thread, i.e. one of many, is started once.",
        "Use the index, for example:",
        "Missing values are marked NA in R and is.na(x) finds them.",
        "which continues a sentence from before the cut",
    ]
)
CODE = st.sampled_from(
    [
        "$ git log master@{1}",
        "> x[is.na(x)] <- 0",
        "python -m venv tutorial-env",
        ">>> for i in range(3):\n...     print(i)",
        "    pool = Pool(4)\n    pool.start()",
        "SELECT * FROM weather WHERE city = 'Hayward';",
    ]
)
SPACE = st.sampled_from([" ", "\n", "\n\n", "  ", "\t", " \n "])


@st.composite
def passages(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(SENTENCES, CODE.map(lambda c: f"\n{c}\n")), max_size=8))
    text = "".join(p + draw(SPACE) for p in parts) or "A"
    # A chunk boundary anywhere: the passage may start and end mid-sentence.
    start = draw(st.integers(0, len(text) // 3))
    end = draw(st.integers(start + 1, len(text)))
    return text[start:end]


@settings(max_examples=300, deadline=None)
@given(
    question=st.sampled_from(
        [
            "How does a retry budget bound retry attempts?",
            "How do I find missing values with is.na?",
            "How do I create a virtual environment with venv?",
            "How do I start the worker pool?",
        ]
    ),
    chunks=st.lists(passages(), min_size=1, max_size=4),
    with_embedder=st.booleans(),
)
def test_every_segment_is_a_substring_of_its_passage_modulo_whitespace(
    question: str, chunks: list[str], with_embedder: bool
) -> None:
    generator = ExtractiveGenerator(embedder=HashingEmbedder() if with_embedder else None)
    segments = answer(question, *chunks, generator=generator)  # asserts it, and validity
    for text in texts(segments):
        assert not text.startswith("which continues"), text  # never a cut fragment
        assert re.search(r"[A-Za-z0-9]", text)


@settings(max_examples=200, deadline=None)
@given(passage=passages())
def test_every_unit_is_its_span_of_the_passage(passage: str) -> None:
    for unit in quotable_units(passage):
        assert normalised(unit.text) == normalised(passage[unit.start : unit.end])
        if unit.code:  # after its lead-in, its lines are lines of the span (indentation aside)
            lines = [line.strip() for line in passage[unit.start : unit.end].splitlines()]
            shown = [line.strip() for line in unit.text.split("\n")]
            assert shown[-1] == next(x for x in reversed(lines) if x)
            assert all(line in lines for line in shown[1:])
