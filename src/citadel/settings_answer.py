"""The answer use case's settings of ``settings_table``: the answerability decision.

Kept in their own module so the table stays short; ``SETTINGS`` splices them in after
the support policy, so the README's table keeps its order.
"""

from __future__ import annotations

from citadel.app import answerability
from citadel.setting_kinds import Integer, Number, Setting

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
