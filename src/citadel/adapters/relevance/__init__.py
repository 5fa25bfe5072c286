"""The relevance scorer adapters (the ``RelevanceScorer`` port).

``CrossEncoderRelevance`` (``cross_encoder.py``) runs the packaged fine-tuned MiniLM
cross-encoder (``model/relevance.onnx``, described by ``model/relevance.json``;
``model_info.py`` pins it); ``LexicalRelevance`` (``lexical.py``) needs no model and is
the fallback; ``GeometricBlend`` (``blend.py``) asks both, the default.
``citadel.bootstrap.relevance`` chooses (docs/relevance.md).
"""

from __future__ import annotations

from citadel.adapters.relevance.blend import GeometricBlend
from citadel.adapters.relevance.cross_encoder import CrossEncoderRelevance, ScoreCache
from citadel.adapters.relevance.lexical import LexicalRelevance
from citadel.adapters.relevance.model_info import ModelInfo, RelevanceUnavailable, read_metadata

__all__ = [
    "CrossEncoderRelevance",
    "GeometricBlend",
    "LexicalRelevance",
    "ModelInfo",
    "RelevanceUnavailable",
    "ScoreCache",
    "read_metadata",
]
