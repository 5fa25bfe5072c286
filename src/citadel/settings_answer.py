"""The answer use case's settings of ``settings_table``: the support check (policy,
checker, span-support judge) and the answerability decision.

One use case's settings in one module; ``SETTINGS`` splices them in after
the generator, so the README's table keeps its order.
"""

from __future__ import annotations

from citadel.app import answerability
from citadel.domain.secrets import SecretStr
from citadel.setting_choices import SUPPORT_CHECKERS
from citadel.setting_kinds import Choice, Integer, Number, Secret, Setting, Text

JUDGE_DEADLINE_S = 5.0
JUDGE_CONCURRENCY = 2

SUPPORT_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_SUPPORT_POLICY",
        "support_policy",
        Choice(("label", "drop", "refuse")),
        "drop",
        "an unsupported or contradicted segment: `drop` removes it (answer limited; the"
        " default, measured in docs/support.md), `label` shows it marked, `refuse` degrades"
        " the answer to its search results",
    ),
    Setting(
        "CITADEL_SUPPORT_CHECKER",
        "support_checker",
        Choice(SUPPORT_CHECKERS),
        "entailment",
        "the support check of model-written segments: `entailment` (the packaged three-way"
        " cross-encoder; when it cannot load, `features` with a warning) or `features` (the"
        " lexical features and word-piece alignment, no transformer pass); quotations are"
        " `verbatim` with either (docs/support.md)",
    ),
    Setting(
        "CITADEL_SUPPORT_JUDGE",
        "support_judge",
        Text(),
        "",
        "a separate OpenAI-compatible model that judges each citation the support checker"
        " did not find quoted or contradicted; it can lower a label, never raise one, and"
        " when it fails, is slow or busy the checker's labels stand (empty: no judge;"
        " docs/support.md)",
    ),
    Setting(
        "CITADEL_SUPPORT_JUDGE_BASE_URL",
        "support_judge_base_url",
        Text(),
        "",
        "the judge's provider (empty: `CITADEL_LLM_BASE_URL`); it uses the LLM's CA file",
    ),
    Setting(
        "CITADEL_SUPPORT_JUDGE_API_KEY",
        "support_judge_api_key",
        Secret(min_bytes=0, strip=False),
        SecretStr(""),
        "the judge's key (never logged or shown); unset, a judge at the LLM's provider uses"
        " the LLM's key and a judge elsewhere gets none",
        secret=True,
    ),
    Setting(
        "CITADEL_SUPPORT_JUDGE_API_KEY_FILE",
        "support_judge_api_key_file",
        Text(),
        "",
        "a file holding the judge's key instead (set one of the two, not both)",
    ),
    Setting(
        "CITADEL_SUPPORT_JUDGE_DEADLINE_S",
        "support_judge_deadline_s",
        Number(),
        JUDGE_DEADLINE_S,
        "the judge's own deadline per answer; past it the checker's labels stand",
    ),
    Setting(
        "CITADEL_SUPPORT_JUDGE_CONCURRENCY",
        "support_judge_concurrency",
        Integer(maximum=64),
        JUDGE_CONCURRENCY,
        "answers judged at once; one more keeps the checker's labels without waiting",
    ),
)

ANSWERABILITY_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_ANSWERABILITY_THRESHOLD",
        "answerability_threshold",
        Number(zero_ok=True, maximum=1.0),
        None,
        "with a relevance scorer: the score in [0, 1] the best evidence passage must reach"
        " for an answer to be written; below it the answer degrades to its closest passages"
        " (`not_in_library`) and no generator is called (unset: the scorer's own threshold,"
        " measured for its weights; `0`: always answer; docs/answers.md)",
    ),
    Setting(
        "CITADEL_ANSWERABILITY_PASSAGES",
        "answerability_passages",
        Integer(maximum=64),
        answerability.DEFAULT_PASSAGES,
        "how many of the selected evidence passages the relevance scorer scores, in"
        " selection order; the scored ones are given to the generator best first",
    ),
)
