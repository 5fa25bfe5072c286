"""The span-support judge against a real OpenAI-compatible provider (marked ``llm``).

Runs when CITADEL_LLM_BASE_URL and CITADEL_LLM_MODEL point at a provider, e.g. the
development server of ``scripts/llm-dev`` (``make test-llm``). Whatever the model
says, the judge gives one known label per pair asked or none at all, inside its
deadline; under the checker it never raises a label, never touches a quotation or a
contradiction, and names itself in every verdict.
"""

from __future__ import annotations

import os
import time

import pytest

from citadel.adapters.generators.contract import GeneratorError
from citadel.adapters.support.judge import JUDGED_LABELS, JudgedSupportChecker, SpanJudge
from citadel.domain.secrets import SecretStr
from citadel.domain.support import LABEL_ORDER, SupportLabel
from tests.fakes.support import TableSupport

pytestmark = pytest.mark.llm

PASSAGE = (
    "Index matrices must not contain negative indices. NA and zero values are allowed: "
    "rows in the index matrix containing a zero are ignored."
)
PAIRS = [
    ("Negative indices are not allowed in an index matrix.", PASSAGE),
    ("Index matrices may contain negative indices.", PASSAGE),
    ("The apply function runs a function over the margins of an array.", PASSAGE),
    ("Index matrices must not contain negative indices.", PASSAGE),
]
DEADLINE_S = 60.0


def judge() -> SpanJudge:
    base_url, model = os.environ.get("CITADEL_LLM_BASE_URL"), os.environ.get("CITADEL_LLM_MODEL")
    if not base_url or not model:
        pytest.skip(
            'needs a provider: CITADEL_LLM_BASE_URL and CITADEL_LLM_MODEL ("make test-llm")'
        )
    key = SecretStr(os.environ.get("CITADEL_LLM_API_KEY", ""))
    return SpanJudge(base_url, model, key, deadline_s=DEADLINE_S)


def test_a_real_judge_gives_a_known_label_per_pair_or_none_in_time() -> None:
    span_judge = judge()
    started = time.monotonic()
    reason = ""
    try:
        labels = span_judge.judge(PAIRS[:3])
    except GeneratorError as exc:  # a small model may not keep to the schema: a reason code
        reason, labels = exc.reason, []
    assert time.monotonic() - started < DEADLINE_S + 5
    if reason:
        assert " " not in reason and not labels
    else:
        assert len(labels) == 3 and all(label in JUDGED_LABELS for label in labels)


def test_under_a_real_judge_no_label_rises_and_quotes_are_not_judged() -> None:
    local = TableSupport(
        {
            PAIRS[0][0]: SupportLabel.SUPPORTED,
            PAIRS[1][0]: SupportLabel.CONTRADICTED,
            PAIRS[2][0]: SupportLabel.UNSUPPORTED,
        }
    )
    span_judge = judge()
    checked = JudgedSupportChecker(local, span_judge).check(PAIRS)
    before = TableSupport(local._labels).check(PAIRS)
    for after, was in zip(checked, before, strict=True):
        assert LABEL_ORDER.index(after.label) >= LABEL_ORDER.index(was.label)
        assert after.judged is None or after.judged.model == span_judge.model
    assert checked[1] == before[1] and checked[3] == before[3]  # contradiction, quotation
    assert checked[3].label is SupportLabel.VERBATIM
