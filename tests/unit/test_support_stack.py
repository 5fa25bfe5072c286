"""The entailment checker's logistic layer (``adapters/support/stack.py``): what it
reads, what it refuses, and that the checker grades its output."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from citadel.adapters.support.entailment import (
    EntailmentSupportChecker,
    EntailmentUnavailable,
    read_metadata,
)
from citadel.adapters.support.stack import INPUTS, Stack, inputs
from citadel.domain.support_contrast import CONTRAST_NAMES
from citadel.domain.support_features import FEATURE_NAMES

PACKAGED = importlib.resources.files("citadel.adapters.support").joinpath("model")
WIDTH = len(INPUTS)


def identity(**changes: Any) -> dict[str, Any]:
    """A layer that gives back the model's own probabilities: each class reads its own
    log-probability with weight one, and nothing else."""
    coef = np.zeros((3, WIDTH))
    coef[0, 0] = coef[1, 1] = coef[2, 2] = 1.0
    layer: dict[str, Any] = {
        "inputs": list(INPUTS),
        "mean": [0.0] * WIDTH,
        "scale": [1.0] * WIDTH,
        "coef": coef.tolist(),
        "intercept": [0.0, 0.0, 0.0],
    }
    layer.update(changes)
    return layer


NO_FEATURES = [0.0] * len(FEATURE_NAMES)
NO_CONTRAST = [0.0] * len(CONTRAST_NAMES)


def test_the_inputs_are_the_log_probabilities_the_features_then_the_contrasts() -> None:
    assert INPUTS[:3] == ("log_entails", "log_contradicts", "log_neither")
    assert INPUTS[3 : 3 + len(FEATURE_NAMES)] == FEATURE_NAMES
    assert INPUTS[3 + len(FEATURE_NAMES) :] == CONTRAST_NAMES


def test_an_input_vector_of_another_width_is_refused() -> None:
    with pytest.raises(ValueError, match="reads"):
        inputs(np.asarray([0.5, 0.3, 0.2]), NO_FEATURES, [])


def test_an_identity_layer_gives_back_the_model_probabilities() -> None:
    stack = Stack.from_document(identity())
    model = np.asarray([0.7, 0.2, 0.1])
    out = stack.probabilities(model, [0.5] * len(FEATURE_NAMES), [1.0] * len(CONTRAST_NAMES))
    assert np.allclose(out, model)


def test_a_feature_weight_moves_the_probabilities_and_they_still_sum_to_one() -> None:
    coef = np.asarray(identity()["coef"])
    coef[1, INPUTS.index("negation_mismatch")] = 3.0  # a negation on one side: contradiction
    stack = Stack.from_document(identity(coef=coef.tolist()))
    features = list(NO_FEATURES)
    calm = stack.probabilities(np.asarray([0.6, 0.2, 0.2]), features, NO_CONTRAST)
    features[FEATURE_NAMES.index("negation_mismatch")] = 1.0
    moved = stack.probabilities(np.asarray([0.6, 0.2, 0.2]), features, NO_CONTRAST)
    assert moved[1] > calm[1] and moved[0] < calm[0]
    assert moved.sum() == pytest.approx(1.0)


def test_a_layer_may_read_some_inputs_in_their_order() -> None:
    names = ["log_entails", "log_contradicts", "log_neither", "antonym_conflict"]
    coef = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 4.0], [0.0, 0.0, 1.0, 0.0]]
    stack = Stack.from_document(
        {
            "inputs": names,
            "mean": [0.0] * 4,
            "scale": [1.0] * 4,
            "coef": coef,
            "intercept": [0.0] * 3,
        }
    )
    model = np.asarray([0.6, 0.2, 0.2])
    features = [9.0] * len(FEATURE_NAMES)  # read by no weight: they change nothing
    assert np.allclose(stack.probabilities(model, features, [5.0, 0.0]), model)
    moved = stack.probabilities(model, features, [0.0, 1.0])
    assert moved.argmax() == 1


def test_a_zero_probability_is_read_at_the_floor_not_as_minus_infinity() -> None:
    stack = Stack.from_document(identity())
    out = stack.probabilities(np.asarray([1.0, 0.0, 0.0]), NO_FEATURES, NO_CONTRAST)
    assert np.isfinite(out).all() and out[0] > 0.99


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"inputs": list(reversed(INPUTS))}, "stack.inputs"),
        ({"inputs": list(INPUTS[1:])}, "stack.inputs"),  # a log-probability left out
        ({"inputs": [*INPUTS, "invented"]}, "stack.inputs"),
        ({"inputs": [*INPUTS, INPUTS[-1]]}, "stack.inputs"),  # twice
        ({"mean": [0.0] * (WIDTH - 1)}, "stack.mean"),
        ({"scale": [0.0] * WIDTH}, "at least"),
        ({"scale": [1e-308] * WIDTH}, "at least"),  # finite, but the layer would overflow
        ({"coef": [[1e308] * WIDTH] * 3}, "within"),
        ({"mean": [True] * WIDTH}, "numbers only"),
        ({"intercept": ["0", 0.0, 0.0]}, "numbers only"),
        ({"coef": [[0.0] * WIDTH] * 2}, "stack.coef"),
        ({"intercept": [0.0, float("nan"), 0.0]}, "finite"),
    ],
)
def test_a_layer_this_code_cannot_apply_is_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Stack.from_document(identity(**changes))


def metadata(tmp_path: Path, **changes: Any) -> Path:
    document = json.loads(PACKAGED.joinpath("entailment.json").read_text("utf-8"))
    document.update(changes)
    path = tmp_path / "entailment.json"
    path.write_text(json.dumps(document), "utf-8")
    return path


def test_metadata_with_a_malformed_layer_is_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(EntailmentUnavailable, match=r"entailment metadata.*stack\.inputs"):
        read_metadata(metadata(tmp_path, stack=identity(inputs=["log_entails"])))


def test_the_checker_grades_what_the_layer_gives(tmp_path: Path) -> None:
    """A layer that always says contradiction makes every scored pair contradicted, and
    ``probabilities`` reports the layer's output, not the model's."""
    segment, passage = "Cloning copies a whole repository.", "git clone copies a repository."
    loud = identity(coef=np.zeros((3, WIDTH)).tolist(), intercept=[0.0, 9.0, 0.0])
    checker = EntailmentSupportChecker(metadata_path=metadata(tmp_path, stack=loud))
    (probs,) = checker.probabilities([(segment, passage)])
    assert probs[1] > 0.99
    (support,) = checker.check([(segment, passage)])
    assert support.label.value == "contradicted"


def test_a_sentence_copied_from_the_passage_hides_no_contradiction(tmp_path: Path) -> None:
    """A segment that copies one of the passage's sentences and contradicts it in the
    next stays ``contradicted`` (a hostile review: an earlier rule let the copy turn it
    into ``partial``, which would show a contradiction as partly supported). The layer
    here calls contradiction whenever most of the segment's words are in the passage."""
    passage = "Trees name blobs and other trees. Git stores every version of a file as a blob."
    coef = np.zeros((3, WIDTH))
    coef[1, INPUTS.index("coverage")] = 20.0
    layer = identity(coef=coef.tolist(), intercept=[0.0, -8.0, 0.0])
    checker = EntailmentSupportChecker(metadata_path=metadata(tmp_path, stack=layer))
    hidden, edited = checker.check(
        [
            ("Trees name blobs and other trees. Git stores no version of a file.", passage),
            ("Trees never name blobs or other trees.", passage),
        ]
    )
    assert hidden.label.value == "contradicted"
    assert edited.label.value == "contradicted"


@pytest.mark.parametrize(
    ("intercept", "label"), [([9.0, 0.0, 0.0], "unsupported"), ([0.0, 9.0, 0.0], "contradicted")]
)
def test_a_title_is_never_supported_but_stays_contradicted(
    tmp_path: Path, intercept: list[float], label: str
) -> None:
    """Dropping a sentence's last stop makes it title-shaped (a hostile review): it may
    lose ``supported``, never ``contradicted``."""
    loud = identity(coef=np.zeros((3, WIDTH)).tolist(), intercept=intercept)
    checker = EntailmentSupportChecker(metadata_path=metadata(tmp_path, stack=loud))
    (support,) = checker.check([("It Is Disabled By Default", "It is enabled by default.")])
    assert support.label.value == label
