"""One contract for the RelevanceScorer port, run against every adapter (the fake included).

As ``citadel.app.ports.RelevanceScorer`` describes it: one probability in [0, 1] per
text, in order; the same pair always the same score (across calls, instances and
threads); no texts, no scores; an empty text 0. The learned and the lexical scorer
must also rank a passage that answers the question above one that does not, on
questions of the project's data (``data/answerability/answerable-*.jsonl``) with
their answer strings as the answering passage and another book's as the other.

The adapters are the composition root's table (``bootstrap/relevance.py``): a scorer
registered there is under this contract without a line here; the fake is added by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from citadel.app.ports import RelevanceScorer
from citadel.bootstrap.relevance import RELEVANCE_SCORERS
from tests.fakes.relevance import TableRelevance

FACTORIES: dict[str, Callable[[], RelevanceScorer]] = {
    # Every scorer CITADEL_RELEVANCE names, as it is built (``model`` is the blend).
    **{name: build for name, build in RELEVANCE_SCORERS.items() if build is not None},
    "table": TableRelevance,
}
RANKERS = ("model", "cross-encoder", "lexical")
"""The adapters that must tell an answering passage from an unrelated one."""

QUESTION = "How do I read the man page for git clone?"
TEXTS = [
    "Git is a fast distributed revision control system. Read the man page with man git-clone.",
    "A data frame is a list of variables of the same number of rows with unique row names.",
    "psql will recognize that the command is not terminated until the semicolon.",
    "The command git help clone opens the same page in the viewer of your choice.",
]
LONG = " ".join(["Tags are expected to always point at the same version of a project."] * 60)

# (question, a passage that answers it, a passage of another book): the questions and
# the answering passages are data/answerability's (ids in the comments).
TRIPLES = [
    (  # git-manual-q0012
        "What's the difference between a tag and a branch head?",
        "Tags are expected to always point at the same version of a project, while heads"
        " are expected to advance as development progresses.",
        "However, window functions do not cause rows to become grouped into a single output"
        " row like non-window aggregate calls would.",
    ),
    (  # postgresql-manual-q0040
        "What's the difference between a window function and a normal aggregate?",
        "However, window functions do not cause rows to become grouped into a single output"
        " row like non-window aggregate calls would. Instead, the rows retain their separate"
        " identities.",
        "By the way, the language is named after the BBC show “Monty Python’s Flying"
        " Circus” and has nothing to do with reptiles.",
    ),
    (  # python-tutorial-q0012
        "Where does the name Python come from - is it the snake?",
        "By the way, the language is named after the BBC show “Monty Python’s Flying"
        " Circus” and has nothing to do with reptiles.",
        "Tags are expected to always point at the same version of a project, while heads"
        " are expected to advance as development progresses.",
    ),
    (  # postgresql-manual-q0012
        "Can I split a CREATE TABLE over several lines in psql?",
        "You can enter this into psql with the line breaks. psql will recognize that the"
        " command is not terminated until the semicolon.",
        "Hence if you try to factor(n), you obtain an empty factorization ! (Because, once"
        " considered as a polynomial, n is a unit in Q[x].)",
    ),
    (  # pari-tutorial-q0040
        "factor(n) gives an empty factorization even though n prints as 3.",
        "Hence if you try to factor(n), you obtain an empty factorization ! (Because, once"
        " considered as a polynomial, n is a unit in Q[x].)",
        "You can enter this into psql with the line breaks. psql will recognize that the"
        " command is not terminated until the semicolon.",
    ),
]


@pytest.fixture(scope="module", params=sorted(FACTORIES))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def scorer(kind: str) -> RelevanceScorer:
    return FACTORIES[kind]()


def test_identity_is_declared(scorer: RelevanceScorer) -> None:
    assert isinstance(scorer.name, str)
    assert "/" in scorer.name  # the scorer and its version


def test_one_score_per_text_in_order(scorer: RelevanceScorer) -> None:
    scores = scorer.score(QUESTION, TEXTS)
    assert len(scores) == len(TEXTS)
    assert all(isinstance(s, float) for s in scores)
    reversed_scores = scorer.score(QUESTION, TEXTS[::-1])
    assert reversed_scores == scores[::-1]
    # Each text alone scores what it scored among the others.
    assert [scorer.score(QUESTION, [t])[0] for t in TEXTS] == scores


@pytest.mark.parametrize(
    "text", [TEXTS[0], LONG, "?!", "Ελληνικά και 中文 ∑ x² ≤ 1", "\x00 clone \t", "git " * 400]
)
def test_scores_are_probabilities(scorer: RelevanceScorer, text: str) -> None:
    (score,) = scorer.score(QUESTION, [text])
    assert 0.0 <= score <= 1.0


def test_no_texts_no_scores(scorer: RelevanceScorer) -> None:
    assert scorer.score(QUESTION, []) == []


@pytest.mark.parametrize("blank", ["", " ", "\n\t  \n"])
def test_an_empty_text_scores_zero(scorer: RelevanceScorer, blank: str) -> None:
    scores = scorer.score(QUESTION, [TEXTS[0], blank, TEXTS[3]])
    assert scores[1] == 0.0
    assert scores[0] > 0.0  # the others are still scored


def test_deterministic_across_calls_and_instances(kind: str, scorer: RelevanceScorer) -> None:
    first = scorer.score(QUESTION, [*TEXTS, LONG])
    assert scorer.score(QUESTION, [*TEXTS, LONG]) == first
    fresh = FACTORIES[kind]()
    assert fresh.score(QUESTION, [*TEXTS, LONG]) == first


def test_concurrent_calls_give_the_same_scores(kind: str) -> None:
    # A fresh instance: the threads race for its first load and its empty cache.
    fresh = FACTORIES[kind]()
    questions = [QUESTION, *(q for q, _, _ in TRIPLES)] * 2
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda q: fresh.score(q, [*TEXTS, LONG]), questions))
    alone = FACTORIES[kind]()
    assert together == [alone.score(q, [*TEXTS, LONG]) for q in questions]


@pytest.fixture(scope="module", params=RANKERS)
def ranker(request: pytest.FixtureRequest) -> RelevanceScorer:
    return FACTORIES[str(request.param)]()


@pytest.mark.parametrize(("question", "answering", "unrelated"), TRIPLES)
def test_the_answering_passage_scores_above_an_unrelated_one(
    ranker: RelevanceScorer, question: str, answering: str, unrelated: str
) -> None:
    if "interim" in ranker.name:
        # A stand-in graph of the right shape whose head is untrained ships while the
        # model trains: its ranking means nothing yet (its metadata says so).
        pytest.xfail(f"{ranker.name} is an interim model, for plumbing only")
    high, low = ranker.score(question, [answering, unrelated])
    assert high > low, ranker.name
