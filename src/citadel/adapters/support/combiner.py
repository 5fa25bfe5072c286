"""The learned combiner: a logistic regression over the pair features, read from JSON.

``weights.json`` (beside this module) is written by ``scripts/train_support.py``
from the project's own labelled pairs (``data/support/``), deterministically; it
holds one model per feature set (``lexical``, ``static``, ``embedder``), each with
its feature names, the standardisation, the coefficients, the two thresholds
chosen by leave-one-book-out cross-validation, and the cross-validated figures
(with SciFact's, measured and never trained on). numpy only at run time.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

WEIGHTS_FILE = "weights.json"


@dataclass(frozen=True, slots=True)
class Combiner:
    """Features -> probability that the passage supports the segment."""

    kind: str
    version: str
    features: tuple[str, ...]
    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    coef: npt.NDArray[np.float64]
    intercept: float
    supported: float
    """The shipped threshold: a score at or above it is ``supported``."""
    partial: float
    """At or above it (and below ``supported``): ``partial``."""
    figures: dict[str, Any]

    def score(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if features.shape[1] != len(self.features):
            raise ValueError(f"{self.kind} takes {len(self.features)} features")
        # Row by row, not a matrix product: BLAS sums a product's terms in an order that
        # depends on how many rows it is given, so one pair's score moved in its last
        # bits with the answer it came in (the contract suite holds it to the same).
        rows = np.ascontiguousarray(features, dtype=np.float64)  # the same sums, any layout
        terms: npt.NDArray[np.float64] = ((rows - self.mean) / self.scale) * self.coef
        z: npt.NDArray[np.float64] = terms.sum(axis=1) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


def load_combiner(kind: str, document: dict[str, Any] | None = None) -> Combiner:
    """The ``kind`` model of the packaged weights (or of ``document``, for tests)."""
    if document is None:
        text = importlib.resources.files(__package__).joinpath(WEIGHTS_FILE).read_text("utf-8")
        document = json.loads(text)
    model = document["models"][kind]
    return Combiner(
        kind=kind,
        version=str(document["version"]),
        features=tuple(model["features"]),
        mean=np.asarray(model["mean"], dtype=np.float64),
        scale=np.asarray(model["scale"], dtype=np.float64),
        coef=np.asarray(model["coef"], dtype=np.float64),
        intercept=float(model["intercept"]),
        supported=float(model["thresholds"]["supported"]),
        partial=float(model["thresholds"]["partial"]),
        figures=dict(model.get("cv", {})),
    )
