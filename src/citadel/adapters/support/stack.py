"""The entailment checker's last layer: its three probabilities and the pair's lexical
features, read together.

The cross-encoder reads the segment and the passage's best sentences; the lexical
features (``domain/support_features.py``) count what it can miss: numbers, negations
and directions present on one side only, coverage of the whole passage; the two
contrasts (``domain/support_contrast.py``) an identifier the passage never writes
and a word whose opposite it writes. A multinomial logistic layer over all three
(the model's log-probabilities, the features, the contrasts, each standardised)
gives the probabilities the checker grades. It is
fitted by ``scripts/train_entailment.py stack`` on held-out probabilities only (each
book's pairs predicted by a model that never saw that book), so it learns how far
to trust the model on a book it has not read, and it is stored in
``entailment.json`` under ``stack``. Measured in ``docs/support.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from citadel.domain.support_contrast import CONTRAST_NAMES
from citadel.domain.support_features import FEATURE_NAMES

PROBABILITY_FLOOR = 1e-6
"""The least probability whose logarithm the layer reads (as in training)."""
INPUTS: tuple[str, ...] = (
    "log_entails",
    "log_contradicts",
    "log_neither",
    *FEATURE_NAMES,
    *CONTRAST_NAMES,
)
"""What a layer can read, in this order: a stored layer names some of them (the three
log-probabilities always), in this order; one naming anything else is refused."""
CLASSES = 3
_LARGEST = 1e6
"""No stored value may exceed this in size, nor a scale fall below its inverse: a fitted
layer is far inside both, and outside them the arithmetic can overflow."""


@dataclass(frozen=True, slots=True)
class Stack:
    """``probabilities(model_probs, features)``: the stacked (entails, contradicts,
    neither) probabilities of one pair."""

    take: np.ndarray
    """The positions in ``INPUTS`` of what this layer reads."""
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    """Shape (3, inputs): one row per class, in the model's class order."""
    intercept: np.ndarray

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Stack:
        """The layer ``entailment.json`` stores; ``ValueError`` if it is not one this
        code can apply (other inputs, wrong shapes, a value not finite)."""
        names = tuple(document["inputs"])
        if (
            names[:3] != INPUTS[:3]
            or not set(names) <= set(INPUTS)
            or sorted(names, key=INPUTS.index) != list(names)
            or len(set(names)) != len(names)
        ):
            raise ValueError(
                f"stack.inputs must be the three log-probabilities, then any of {list(INPUTS[3:])}"
                f" once each, in that order; not {list(names)}"
            )
        take = np.asarray([INPUTS.index(name) for name in names])
        width = len(names)
        mean = _array(document["mean"], (width,), "stack.mean")
        scale = _array(document["scale"], (width,), "stack.scale")
        if not bool((scale >= 1 / _LARGEST).all()):
            raise ValueError(f"stack.scale must be at least {1 / _LARGEST}")
        coef = _array(document["coef"], (CLASSES, width), "stack.coef")
        intercept = _array(document["intercept"], (CLASSES,), "stack.intercept")
        return cls(take, mean, scale, coef, intercept)

    def probabilities(
        self, model_probs: np.ndarray, features: Sequence[float], contrast: Sequence[float]
    ) -> np.ndarray:
        x = inputs(model_probs, features, contrast)[self.take]
        z = self.coef @ ((x - self.mean) / self.scale)
        z = z + self.intercept
        e = np.exp(z - z.max())
        out: np.ndarray = e / e.sum()
        return out


def inputs(
    model_probs: np.ndarray, features: Sequence[float], contrast: Sequence[float]
) -> np.ndarray:
    """The layer's input vector, in ``INPUTS`` order (training builds it here too)."""
    logs = np.log(np.maximum(np.asarray(model_probs, dtype=np.float64), PROBABILITY_FLOOR))
    x = np.concatenate([logs, np.asarray(features, dtype=np.float64), np.asarray(contrast)])
    if x.shape != (len(INPUTS),):
        raise ValueError(f"the stack reads {len(INPUTS)} values, not {x.shape}")
    return x


def _array(value: Any, shape: tuple[int, ...], key: str) -> np.ndarray:
    if not _numbers(value):
        raise ValueError(f"{key} must hold numbers only (no booleans or strings)")
    out = np.asarray(value, dtype=np.float64)
    if out.shape != shape:
        raise ValueError(f"{key} must have shape {shape}, not {out.shape}")
    if not all(math.isfinite(v) for v in out.reshape(-1)):
        raise ValueError(f"{key} must be finite")
    if bool((np.abs(out) > _LARGEST).any()):
        raise ValueError(f"{key} must lie within ±{_LARGEST:g}")
    return out


def _numbers(value: Any) -> bool:
    """A number, or a list of them, nested: never a boolean or a string."""
    if isinstance(value, list):
        return all(_numbers(v) for v in value)
    return isinstance(value, int | float) and not isinstance(value, bool)
