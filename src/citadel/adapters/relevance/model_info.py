"""The relevance model's files: the pinned ONNX graph and the metadata beside it.

Both ship inside citadel (``adapters/relevance/model/``): ``relevance.onnx``, the int8
cross-encoder ``scripts/train_relevance.py`` exports, and ``relevance.json``, what
the run time needs to read it (name, word-piece limit, calibration, threshold) and
where it came from (any other key: training provenance). The graph's sha256 is pinned here, in
``MODEL_SHA256`` and nowhere else in the code; the metadata repeats it, and a
metadata file written for another graph is refused. Replacing the model means
replacing the two files and this one constant.
"""

from __future__ import annotations

import importlib.resources
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citadel.app.errors import ModelUnavailable

MODEL_PACKAGE = "citadel.adapters.relevance"
MODEL_PARTS = ("model", "relevance.onnx")
METADATA_PARTS = ("model", "relevance.json")
MODEL_SHA256 = "452f504e5a9a4b3c752ddacb8233a51d466d3628b4722a273f755d1d90abc817"
"""The one pin: the sha256 of ``model/relevance.onnx``."""


class RelevanceUnavailable(ModelUnavailable):
    """The relevance model cannot be used: a file is missing, altered or unreadable,
    or onnxruntime refused it."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What ``relevance.json`` says about the graph."""

    name: str
    """The scorer's name (``RelevanceScorer.name``), e.g. ``relevance-minilm-l3/1``."""
    max_pieces: int
    """Word pieces per (question, text) pair, special tokens included; longer pairs
    are truncated longest-first, as in training."""
    a: float
    b: float
    """Calibration: the probability is ``sigmoid(a * logit + b)``."""
    threshold: float
    """The shipped answerability threshold on the calibrated probability."""
    sha256: str
    """The graph's sha256 as the metadata records it (must equal ``MODEL_SHA256``)."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """Every other key (training data, splits, arguments, figures): read by people,
    not by code."""


def read_metadata(path: Path | None = None) -> ModelInfo:
    """The packaged metadata (or ``path``), checked; ``RelevanceUnavailable`` otherwise."""
    where = str(path) if path is not None else "/".join((MODEL_PACKAGE, *METADATA_PARTS))
    try:
        if path is not None:
            text = path.read_text(encoding="utf-8")
        else:
            resource = importlib.resources.files(MODEL_PACKAGE).joinpath(*METADATA_PARTS)
            text = resource.read_text(encoding="utf-8")
        document = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RelevanceUnavailable(f"cannot read the relevance metadata {where}: {exc}") from exc
    try:
        return _parse(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise RelevanceUnavailable(f"the relevance metadata {where} is malformed: {exc}") from exc


_READ = frozenset({"name", "max_pieces", "calibration", "threshold", "sha256"})


def _parse(document: Any) -> ModelInfo:
    if not isinstance(document, dict):
        raise TypeError("not a JSON object")
    calibration = document["calibration"]
    info = ModelInfo(
        name=_text(document["name"], "name"),
        max_pieces=int(document["max_pieces"]),
        a=_finite(calibration["a"], "calibration.a"),
        b=_finite(calibration["b"], "calibration.b"),
        threshold=_finite(document["threshold"], "threshold"),
        sha256=_text(document["sha256"], "sha256").lower(),
        provenance={k: v for k, v in document.items() if k not in _READ},
    )
    if not 3 <= info.max_pieces <= 512:  # [CLS] q [SEP] t [SEP]; 512 positions in MiniLM
        raise ValueError(f"max_pieces must be between 3 and 512, got {info.max_pieces}")
    if info.a <= 0:
        raise ValueError(
            f"calibration.a must be positive (a higher logit, a higher score), got {info.a}"
        )
    if not 0.0 <= info.threshold <= 1.0:
        raise ValueError(f"threshold must lie in [0, 1], got {info.threshold}")
    return info


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string")
    return value


def _finite(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} must be a finite number")
    return float(value)
