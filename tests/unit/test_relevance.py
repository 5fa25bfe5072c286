"""The relevance adapters' own rules: the pin, the metadata, calibration, the cache,
the lexical mapping, and the bootstrap's choice with its fallback (docs/relevance.md)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from importlib.resources import files
from pathlib import Path

import pytest

from citadel.adapters.relevance import (
    CrossEncoderRelevance,
    GeometricBlend,
    LexicalRelevance,
    RelevanceUnavailable,
    ScoreCache,
    model_info,
    read_metadata,
)
from citadel.bootstrap import relevance as wiring
from citadel.bootstrap.fallback import loaded
from citadel.config import ConfigError, Settings

PACKAGED = files("citadel.adapters.relevance").joinpath("model")
QUESTION = "What's the difference between a tag and a branch head?"
ANSWER = "Tags are expected to always point at the same version of a project."


def packaged_metadata() -> dict[str, object]:
    document = json.loads(PACKAGED.joinpath("relevance.json").read_text("utf-8"))
    assert isinstance(document, dict)
    return document


def write_metadata(path: Path, **changes: object) -> Path:
    path.write_text(json.dumps({**packaged_metadata(), **changes}), encoding="utf-8")
    return path


def test_the_packaged_files_match_the_one_pin() -> None:
    graph = PACKAGED.joinpath("relevance.onnx").read_bytes()
    assert hashlib.sha256(graph).hexdigest() == model_info.MODEL_SHA256
    assert read_metadata().sha256 == model_info.MODEL_SHA256


def test_an_altered_graph_is_refused_naming_both_hashes(tmp_path: Path) -> None:
    graph = bytearray(PACKAGED.joinpath("relevance.onnx").read_bytes())
    graph[len(graph) // 2] ^= 0xFF
    altered = tmp_path / "relevance.onnx"
    altered.write_bytes(bytes(graph))
    scorer = CrossEncoderRelevance(model_path=altered)
    with pytest.raises(RelevanceUnavailable) as caught:
        scorer.score(QUESTION, [ANSWER])
    message = str(caught.value)
    assert hashlib.sha256(graph).hexdigest() in message
    assert model_info.MODEL_SHA256 in message
    assert "refusing" in message


def test_a_missing_graph_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RelevanceUnavailable, match="cannot read"):
        CrossEncoderRelevance(model_path=tmp_path / "absent.onnx").load()


def test_metadata_for_another_graph_is_refused_naming_both_hashes(tmp_path: Path) -> None:
    other = "ab" * 32
    path = write_metadata(tmp_path / "relevance.json", sha256=other)
    with pytest.raises(RelevanceUnavailable) as caught:
        CrossEncoderRelevance(metadata_path=path)
    assert other in str(caught.value)
    assert model_info.MODEL_SHA256 in str(caught.value)


@pytest.mark.parametrize(
    "changes",
    [
        {"calibration": {"a": 1.0}},
        {"calibration": {"a": 0.0, "b": 0.0}},
        {"calibration": {"a": "1", "b": 0.0}},
        {"threshold": 1.5},
        {"max_pieces": 1024},
        {"name": ""},
    ],
)
def test_malformed_metadata_is_refused(tmp_path: Path, changes: dict[str, object]) -> None:
    path = write_metadata(tmp_path / "relevance.json", **changes)
    with pytest.raises(RelevanceUnavailable, match="malformed"):
        read_metadata(path)


def test_unreadable_metadata_is_refused(tmp_path: Path) -> None:
    (tmp_path / "relevance.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(RelevanceUnavailable, match="cannot read"):
        read_metadata(tmp_path / "relevance.json")
    with pytest.raises(RelevanceUnavailable, match="cannot read"):
        CrossEncoderRelevance(metadata_path=tmp_path / "absent.json")


def test_the_name_and_threshold_are_the_metadatas() -> None:
    info = read_metadata()
    scorer = CrossEncoderRelevance()
    assert (scorer.name, scorer.threshold) == (info.name, info.threshold)


def test_the_probability_is_the_calibrated_logistic_of_the_logit(tmp_path: Path) -> None:
    info = read_metadata()
    path = write_metadata(tmp_path / "relevance.json", calibration={"a": 2.0, "b": -1.0})
    plain, scaled = CrossEncoderRelevance(), CrossEncoderRelevance(metadata_path=path)
    (p,) = plain.score(QUESTION, [ANSWER])
    (q,) = scaled.score(QUESTION, [ANSWER])
    logit = (math.log(p / (1 - p)) - info.b) / info.a  # the raw logit, recovered
    assert q == pytest.approx(1 / (1 + math.exp(-(2.0 * logit - 1.0))), rel=1e-9)


def test_an_empty_question_scores_every_text_zero() -> None:
    scorer = CrossEncoderRelevance()
    assert scorer.score("  ", [ANSWER, "x"]) == [0.0, 0.0]
    assert len(scorer.cache) == 0


def test_scores_are_cached_once_per_pair_and_blank_texts_never() -> None:
    scorer = CrossEncoderRelevance()
    first = scorer.score(QUESTION, [ANSWER, "", ANSWER, "other text"])
    assert len(scorer.cache) == 2
    assert first[0] == first[2]
    assert scorer.score(QUESTION, [ANSWER]) == [first[0]]
    assert len(scorer.cache) == 2


def test_the_cache_evicts_the_least_recently_used() -> None:
    cache = ScoreCache(2)
    a, b, c = (ScoreCache.key("q", t) for t in "abc")
    cache.put(a, 0.1)
    cache.put(b, 0.2)
    assert cache.get(a) == 0.1  # a is now the most recent
    cache.put(c, 0.3)
    assert cache.get(b) is None
    assert (cache.get(a), cache.get(c)) == (0.1, 0.3)
    unbounded = ScoreCache(0)
    unbounded.put(a, 0.5)
    assert unbounded.get(a) is None  # size 0: nothing kept


def test_the_cache_key_keeps_question_and_text_apart() -> None:
    assert ScoreCache.key("ab", "c") != ScoreCache.key("a", "bc")
    assert ScoreCache.key("q", "t") == ScoreCache.key("q", "t")


def test_lexical_scores_follow_the_share_of_question_terms() -> None:
    scorer = LexicalRelevance()
    # Its terms: difference, tag, branch, head.
    none, half, every = scorer.score(
        "The difference between a tag and a branch head?",
        ["rows retain their identities", "tags and heads", "the difference: tag, branch, head"],
    )
    assert none < 0.01
    assert half == pytest.approx(0.5)
    assert every > 0.99
    assert scorer.threshold == 0.5


def test_a_question_of_stop_words_only_scores_zero_lexically() -> None:
    assert LexicalRelevance().score("What is it?", ["it is what it is"]) == [0.0]


def test_the_setting_chooses_the_scorer() -> None:
    assert Settings.from_env({}).relevance == "model"
    assert wiring.relevance_scorer(Settings.from_env({"CITADEL_RELEVANCE": "off"})) is None
    lexical = wiring.relevance_scorer(Settings.from_env({"CITADEL_RELEVANCE": "lexical"}))
    assert isinstance(lexical, LexicalRelevance)
    model = wiring.relevance_scorer(Settings.from_env({"CITADEL_RELEVANCE": "cross-encoder"}))
    assert isinstance(model, CrossEncoderRelevance)
    assert model.name == read_metadata().name
    blend = wiring.relevance_scorer(Settings.from_env({"CITADEL_RELEVANCE": " Model "}))
    assert isinstance(blend, GeometricBlend)
    assert blend.name == f"{read_metadata().name}+{LexicalRelevance.name}"
    assert blend.threshold == 0.10


def test_the_blend_is_the_geometric_mean_of_its_two_scorers() -> None:
    from tests.fakes.relevance import TableRelevance

    blend = GeometricBlend(TableRelevance({"a": 0.64}), TableRelevance({"a": 0.25}))
    assert blend.score("q", ["a text", ""]) == [pytest.approx(0.4), 0.0]
    assert blend.name == "table-relevance/1+table-relevance/1"


def test_an_unknown_scorer_is_refused() -> None:
    with pytest.raises(ConfigError, match="CITADEL_RELEVANCE"):
        Settings.from_env({"CITADEL_RELEVANCE": "bm25"})


def failing(model_path: Path) -> wiring.RelevanceBuilder:
    """The default row (blend) over a cross-encoder whose file is ``model_path``."""
    return lambda: GeometricBlend(
        loaded(CrossEncoderRelevance(model_path=model_path)), LexicalRelevance()
    )


def test_a_model_that_cannot_load_falls_back_to_lexical_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(wiring, "_warned", set())
    absent = tmp_path / "absent.onnx"
    settings = Settings.from_env({})
    broken = {**wiring.RELEVANCE_SCORERS, "model": failing(absent)}
    with caplog.at_level(logging.WARNING, logger="citadel.bootstrap.relevance"):
        first = wiring.relevance_scorer(settings, scorers=broken)
        again = wiring.relevance_scorer(settings, scorers=broken)
    assert isinstance(first, LexicalRelevance)
    assert isinstance(again, LexicalRelevance)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "absent.onnx" in warnings[0].getMessage()
    assert "relevance-lexical/1" in warnings[0].getMessage()


def test_an_altered_model_falls_back_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(wiring, "_warned", set())
    altered = tmp_path / "relevance.onnx"
    altered.write_bytes(PACKAGED.joinpath("relevance.onnx").read_bytes() + b"\0")
    with caplog.at_level(logging.WARNING, logger="citadel.bootstrap.relevance"):
        scorer = wiring.relevance_scorer(
            Settings.from_env({}), scorers={**wiring.RELEVANCE_SCORERS, "model": failing(altered)}
        )
    assert isinstance(scorer, LexicalRelevance)
    assert model_info.MODEL_SHA256 in caplog.text
