"""The entailment support checker: quotation first, then a three-way cross-encoder.

A segment that quotes its passage and states something is ``verbatim``, as in
every checker (``domain/quotation.py``, ``domain/statement.py``): it costs no model
run. Any other (segment, passage) pair is read by the packaged int8 MiniLM
cross-encoder ``scripts/train_entailment.py`` trains on the project's written pairs
(``data/support/``; SciFact only measures it). Its three logits are the pair's
probabilities that the passage entails the segment, contradicts it, or neither.

The passage the model reads is what it read in training: the passage's
``sentences`` sentences (``entailment.json``) sharing the most content words with
the segment (``features_and_sentences``), so a whole chunk and a one-sentence
passage look alike to it. Its three probabilities and the pair's lexical features
then go through the stored logistic layer (``stack.py``, ``entailment.json``'s
``stack``) when there is one: the probabilities below are that layer's.

The label: ``contradicted`` when contradiction is the most probable reading and
its probability reaches the ``contradicted`` threshold; otherwise the probability of
entailment is the score, graded by the thresholds and the rules every learned
checker shares (``checker.graded``: a number the passage never states is not
supported, a short segment needs two words in the passage, ``partial`` needs a third
of them). The thresholds were chosen on leave-one-book-out probabilities
(``docs/support.md``).
"""

from __future__ import annotations

import importlib.resources
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from citadel.adapters.pair_encoder import PairEncoder, PinnedGraph
from citadel.adapters.support.checker import NON_VERBATIM_CEILING, graded, unasserted
from citadel.adapters.support.stack import Stack
from citadel.app.errors import ModelUnavailable
from citadel.app.ports.support import JudgeBudget
from citadel.domain.quotation import verbatim_span
from citadel.domain.support import Support, SupportLabel
from citadel.domain.support_contrast import contrast_features
from citadel.domain.support_features import FEATURE_NAMES, features_and_sentences

MODEL_PACKAGE = "citadel.adapters.support"
MODEL_PARTS = ("model", "entailment.onnx")
METADATA_PARTS = ("model", "entailment.json")
MODEL_SHA256 = "4a0212bf1af74e4ce2c7b4836cc87cca2d4f5f586d6a83c511d8cfa76d168563"
"""The one pin: the sha256 of ``model/entailment.onnx``."""
CLASSES = ("entails", "contradicts", "neither")
"""The graph's three logits, in order (``scripts/train_entailment.py``'s ``LABELS``)."""

_COVERAGE = FEATURE_NAMES.index("coverage")
_SEGMENT_TERMS = FEATURE_NAMES.index("log_segment_terms")
_NUMBERS_MISSING = FEATURE_NAMES.index("numbers_missing")


class EntailmentUnavailable(ModelUnavailable):
    """The entailment model cannot be used: a file is missing, altered or unreadable,
    or onnxruntime refused it."""


@dataclass(frozen=True, slots=True)
class EntailmentInfo:
    """What ``entailment.json`` says about the graph."""

    name: str
    """The checker's name as the audit records it, e.g. ``support/2/entailment-l3``."""
    max_pieces: int
    sentences: int
    """How many of the passage's best-matching sentences the model reads."""
    supported: float
    partial: float
    contradicted: float
    """Thresholds: on P(entails) for the first two, on P(contradicts) for the last."""
    sha256: str
    stack: Stack | None = None
    """The layer over the model's probabilities and the features (``stack.py``), if any."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """Every other key (training data, arguments, figures): read by people, not code."""


_READ = frozenset({"name", "max_pieces", "sentences", "thresholds", "sha256", "stack"})


def read_metadata(path: Path | None = None) -> EntailmentInfo:
    """The packaged metadata (or ``path``), checked; ``EntailmentUnavailable`` otherwise."""
    where = str(path) if path is not None else "/".join((MODEL_PACKAGE, *METADATA_PARTS))
    try:
        if path is not None:
            text = path.read_text(encoding="utf-8")
        else:
            resource = importlib.resources.files(MODEL_PACKAGE).joinpath(*METADATA_PARTS)
            text = resource.read_text(encoding="utf-8")
        document = json.loads(text)
        if not isinstance(document, dict):
            raise TypeError("not a JSON object")
        thresholds = document["thresholds"]
        info = EntailmentInfo(
            name=_text(document["name"], "name"),
            max_pieces=_count(document["max_pieces"], "max_pieces"),
            sentences=_count(document["sentences"], "sentences"),
            supported=_probability(thresholds["supported"], "thresholds.supported"),
            partial=_probability(thresholds["partial"], "thresholds.partial"),
            contradicted=_probability(thresholds["contradicted"], "thresholds.contradicted"),
            sha256=_text(document["sha256"], "sha256").lower(),
            stack=Stack.from_document(document["stack"]) if "stack" in document else None,
            provenance={k: v for k, v in document.items() if k not in _READ},
        )
    except (
        OSError,
        UnicodeDecodeError,
        ValueError,
        KeyError,
        TypeError,
        OverflowError,
        RecursionError,
    ) as exc:
        raise EntailmentUnavailable(f"cannot read the entailment metadata {where}: {exc}") from exc
    if not 3 <= info.max_pieces <= 512 or not 1 <= info.sentences <= 16:
        raise EntailmentUnavailable(
            f"the entailment metadata {where} is malformed: max_pieces {info.max_pieces} "
            f"(3-512), sentences {info.sentences} (1-16)"
        )
    if info.partial > info.supported:
        raise EntailmentUnavailable(
            f"the entailment metadata {where} is malformed: partial above supported"
        )
    return info


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string")
    return value


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be a whole number")
    return value


def _probability(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{key} must be a number in [0, 1]")
    return float(value)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max())
    return np.asarray(z / z.sum())


class EntailmentSupportChecker:
    """The ``SupportChecker`` port on quotation detection plus the entailment model."""

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        metadata_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int | None = None,
    ) -> None:
        self.info = read_metadata(metadata_path)
        if self.info.sha256 != MODEL_SHA256:
            raise EntailmentUnavailable(
                f"the entailment metadata describes the graph of sha256 {self.info.sha256}, "
                f"but the pinned graph is {MODEL_SHA256}: the two files and the pin "
                "must be replaced together"
            )
        self.name = self.info.name
        self._encoder = PairEncoder(
            PinnedGraph(MODEL_PACKAGE, MODEL_PARTS, MODEL_SHA256),
            outputs=len(CLASSES),
            max_pieces=self.info.max_pieces,
            error=EntailmentUnavailable,
            what="entailment",
            model_path=model_path,
            tokenizer_path=tokenizer_path,
            threads=threads,
        )

    def __repr__(self) -> str:
        return f"EntailmentSupportChecker(name={self.name!r})"

    def load(self) -> None:
        """Check and load the model now; ``check`` does it on first use."""
        self._encoder.load()

    def check(
        self, pairs: Sequence[tuple[str, str]], *, budget: JudgeBudget | None = None
    ) -> list[Support]:
        results: list[Support | None] = []
        scored: list[tuple[str, str]] = []
        for segment, passage in pairs:
            span = verbatim_span(segment, passage)
            if span is None:
                results.append(None)
                scored.append((segment, passage))
            else:
                results.append(Support(1.0, SupportLabel.VERBATIM, span))
        made = iter(self._judge(scored))
        return [
            unasserted(segment, r if r is not None else next(made))
            for (segment, _), r in zip(pairs, results, strict=True)
        ]

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[np.ndarray]:
        """Each pair's (entails, contradicts, neither) probabilities, after the stack if
        there is one: those the labels are graded on (for evaluation)."""
        return [p for p, _ in self._read(pairs)]

    def _read(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[np.ndarray, list[float]]]:
        rows: list[list[float]] = []
        inputs: list[tuple[str, str]] = []
        for segment, passage in pairs:
            row, chosen = features_and_sentences(segment, passage, self.info.sentences)
            rows.append(row)
            inputs.append((segment, " ".join(chosen) or passage))
        logits = self._encoder.logits(inputs)
        stack = self.info.stack
        if stack is None:
            return [(softmax(v), row) for v, row in zip(logits, rows, strict=True)]
        out = []
        for v, row, (segment, passage) in zip(logits, rows, pairs, strict=True):
            probs = stack.probabilities(softmax(v), row, contrast_features(segment, passage))
            if not np.isfinite(probs).all():
                raise EntailmentUnavailable(f"the entailment layer gave {probs.tolist()}")
            out.append((probs, row))
        return out

    def _judge(self, pairs: Sequence[tuple[str, str]]) -> list[Support]:
        found: list[Support] = []
        for probs, row in self._read(pairs):
            entails = float(probs[0])
            score = min(max(entails, 0.0), NON_VERBATIM_CEILING)
            if self._contradicts(probs):
                found.append(Support(score, SupportLabel.CONTRADICTED))
                continue
            found.append(
                graded(
                    entails,
                    supported=self.info.supported,
                    partial=self.info.partial,
                    coverage=float(row[_COVERAGE]),
                    terms=round(math.expm1(float(row[_SEGMENT_TERMS]))),
                    numbers_missing=bool(row[_NUMBERS_MISSING] > 0),
                )
            )
        return found

    def _contradicts(self, probs: np.ndarray) -> bool:
        return float(probs[1]) >= self.info.contradicted and int(np.argmax(probs)) == 1
