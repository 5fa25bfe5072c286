"""One contract for the SupportChecker port, run against every adapter (the fake included).

As ``citadel.app.ports.support.SupportChecker`` describes it: a non-empty ``name``;
one ``Support`` per pair, in order; no pairs, no results; the same pair always the
same result (across calls, batches, instances and threads); a quotation of the
passage that states something is ``verbatim`` with its exact span; a number or a
word that merely occurs in the passage is not; only a quotation scores 1.0. The
learned checkers must also label a faithful paraphrase above a minimal-edit
contradiction and an off-target sentence, on pairs of the project's data
(``data/support/written-*.jsonl``, ids in the comments).

The adapters are the composition root's table (``bootstrap/support.py``): a checker
registered there is under this contract without a line here; the fakes and the
judged checker are added by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from citadel.adapters.support import lexical_checker
from citadel.adapters.support.entailment import EntailmentSupportChecker
from citadel.app.ports.support import SupportChecker
from citadel.bootstrap.support import SUPPORT_CHECKERS
from citadel.domain.support import LABEL_ORDER, SupportLabel
from tests.fakes.judge import judged_by
from tests.fakes.support import TableSupport


def judged() -> SupportChecker:
    """The entailment checker under a judge that agrees: the judge's path, the local labels."""
    return judged_by(EntailmentSupportChecker(), "supported", "agreeing-judge")


FACTORIES: dict[str, Callable[[], SupportChecker]] = {
    **SUPPORT_CHECKERS,  # every checker CITADEL_SUPPORT_CHECKER names, as it is built
    "judged": judged,
    "lexical": lexical_checker,
    "table": TableSupport,
}
LEARNED = ("entailment", "judged")
"""The adapters that must order support above contradiction and off-target sentences."""

PASSAGE = (
    "The git clone command copies a repository into a new directory. "
    "By default it checks out the branch the remote's HEAD points at. "
    "Use --depth 1 to fetch only the latest commit."
)
PAIRS = [
    ("The git clone command copies a repository into a new directory.", PASSAGE),
    ("Cloning makes a copy of the repository in a fresh directory.", PASSAGE),
    ("1", PASSAGE),
    ("commit", PASSAGE),
    ("R stores analysis results in fitted objects for later use.", PASSAGE),
]

# (passage, faithful sentence, contradiction, off-target sentence)
GRADED = [
    (  # r-intro: rows around r-intro-s00001
        "In S a statistical analysis is normally done as a series of steps,\nwith intermediate"
        " results being stored in objects.",
        "In R, an analysis usually proceeds step by step, keeping intermediate results in objects.",
        "In R, an analysis is normally done in a single step, with no intermediate results"
        " stored in objects.",
        "R prints a detailed ANOVA table for every model it fits, with no need to ask.",
    ),
    (
        "The git clone command copies a repository into a new directory. By default it checks"
        " out the branch the remote's HEAD points at.",
        "Cloning copies a repository into a new directory and checks out the branch the"
        " remote HEAD names.",
        "Cloning copies a repository into the current directory and checks out no branch at all.",
        "The git gc command packs loose objects and prunes unreachable ones from the repository.",
    ),
]


@pytest.fixture(params=sorted(FACTORIES))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def checker(name: str) -> SupportChecker:
    return FACTORIES[name]()


def test_it_has_a_name(checker: SupportChecker) -> None:
    assert isinstance(checker.name, str) and checker.name.strip()


def test_one_result_per_pair_in_order(checker: SupportChecker) -> None:
    results = checker.check(PAIRS)
    assert len(results) == len(PAIRS)
    one_by_one = [checker.check([pair])[0] for pair in PAIRS]
    assert results == one_by_one
    assert checker.check(list(reversed(PAIRS))) == list(reversed(results))


def test_no_pairs_no_results(checker: SupportChecker) -> None:
    assert checker.check([]) == []


def test_a_quotation_that_states_something_is_verbatim_with_its_span(
    checker: SupportChecker,
) -> None:
    (quoted,) = checker.check([PAIRS[0]])
    assert quoted.label is SupportLabel.VERBATIM
    assert quoted.score == 1.0 and quoted.span is not None
    start, end = quoted.span
    assert PASSAGE[start:end] == PAIRS[0][0]


def test_a_number_or_a_word_found_in_the_passage_is_not_verbatim(
    checker: SupportChecker,
) -> None:
    for result in checker.check(PAIRS[2:4]):
        assert result.label is not SupportLabel.VERBATIM
        assert result.span is None


def test_only_a_quotation_scores_one(checker: SupportChecker) -> None:
    for result in checker.check(PAIRS[1:]):
        assert 0.0 <= result.score < 1.0


def test_the_same_pair_gets_the_same_result_across_instances_and_threads(name: str) -> None:
    first = FACTORIES[name]().check(PAIRS)
    other = FACTORIES[name]()
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda _: other.check(PAIRS), range(8)))
    assert all(run == first for run in found)


@pytest.mark.parametrize("learned", LEARNED)
@pytest.mark.parametrize(("passage", "faithful", "contradiction", "off_target"), GRADED)
def test_a_learned_checker_grades_support_above_contradiction_and_off_target(
    learned: str, passage: str, faithful: str, contradiction: str, off_target: str
) -> None:
    checker = FACTORIES[learned]()
    good, wrong, elsewhere = checker.check(
        [(faithful, passage), (contradiction, passage), (off_target, passage)]
    )
    rank = LABEL_ORDER.index
    assert good.score > wrong.score and good.score > elsewhere.score
    assert rank(good.label) < rank(wrong.label)
    assert rank(good.label) < rank(elsewhere.label)
    assert elsewhere.label in (SupportLabel.UNSUPPORTED, SupportLabel.CONTRADICTED)
