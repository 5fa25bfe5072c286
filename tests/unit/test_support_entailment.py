"""The entailment support checker: its metadata, its labels, its wiring and fallback.

The port's contract (one result per pair, quotations, determinism) is
``tests/contract/test_support_contract.py``; here is what only this adapter does.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import citadel.bootstrap.support as wiring
from citadel.adapters.support import FeatureSupportChecker
from citadel.adapters.support.entailment import (
    MODEL_SHA256,
    EntailmentSupportChecker,
    EntailmentUnavailable,
    read_metadata,
)
from citadel.bootstrap.fallback import loaded
from citadel.config import ConfigError, Settings
from citadel.domain.support import SupportLabel

PACKAGED = importlib.resources.files("citadel.adapters.support").joinpath("model")


def metadata(tmp_path: Path, **changes: Any) -> Path:
    document = json.loads(PACKAGED.joinpath("entailment.json").read_text("utf-8"))
    document.update(changes)
    path = tmp_path / "entailment.json"
    path.write_text(json.dumps(document), "utf-8")
    return path


def test_the_packaged_metadata_describes_the_pinned_graph() -> None:
    info = read_metadata()
    assert info.sha256 == MODEL_SHA256
    assert 0 < info.partial <= info.supported < 1
    assert 0 < info.contradicted < 1
    assert info.name.startswith("support/")


@pytest.mark.parametrize(
    "changes",
    [
        {"thresholds": {"supported": 0.2, "partial": 0.5, "contradicted": 0.5}},
        {"thresholds": {"supported": 1.5, "partial": 0.1, "contradicted": 0.5}},
        {"thresholds": {"supported": 0.5, "partial": 0.1}},
        {"max_pieces": 1000},
        {"sentences": 0},
        {"name": ""},
        {"max_pieces": "112"},  # a string, a fraction, a boolean: no count
        {"max_pieces": 112.9},
        {"sentences": True},
    ],
)
def test_malformed_metadata_is_refused(tmp_path: Path, changes: dict[str, Any]) -> None:
    with pytest.raises(EntailmentUnavailable, match="entailment metadata"):
        read_metadata(metadata(tmp_path, **changes))


def test_metadata_written_for_another_graph_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EntailmentUnavailable, match="replaced together"):
        EntailmentSupportChecker(metadata_path=metadata(tmp_path, sha256="ab" * 32))


def test_an_altered_graph_is_refused_before_onnxruntime_reads_it(tmp_path: Path) -> None:
    altered = tmp_path / "entailment.onnx"
    altered.write_bytes(PACKAGED.joinpath("entailment.onnx").read_bytes()[:-1] + b"\0")
    checker = EntailmentSupportChecker(model_path=altered)
    with pytest.raises(EntailmentUnavailable, match="sha256"):
        checker.check([("Cloning copies a repository.", "git clone copies a repository.")])


def test_probabilities_are_three_that_sum_to_one() -> None:
    checker = EntailmentSupportChecker()
    (probs,) = checker.probabilities(
        [("Cloning copies a repository.", "The git clone command copies a repository.")]
    )
    assert probs.shape == (3,)
    assert float(probs.sum()) == pytest.approx(1.0)
    assert bool(np.all(probs >= 0))


def test_a_negated_rule_is_contradicted_and_its_quotation_verbatim() -> None:
    passage = "Index matrices must not contain negative indices. NA and zero values are allowed."
    checker = EntailmentSupportChecker()
    quoted, negated = checker.check(
        [
            ("Index matrices must not contain negative indices.", passage),
            ("Index matrices may contain negative indices.", passage),
        ]
    )
    assert quoted.label is SupportLabel.VERBATIM
    assert negated.label is SupportLabel.CONTRADICTED
    (probs,) = checker.probabilities([("Index matrices may contain negative indices.", passage)])
    assert float(probs[1]) >= read_metadata().contradicted


def test_a_number_the_passage_never_states_is_not_supported() -> None:
    passage = "The git clone command copies a repository into a new directory."
    (result,) = EntailmentSupportChecker().check(
        [("The git clone command copies a repository into 3 new directories.", passage)]
    )
    assert result.label is not SupportLabel.SUPPORTED


def test_the_setting_chooses_the_checker() -> None:
    assert Settings.from_env({}).support_checker == "entailment"
    chosen = wiring.support_checker(Settings.from_env({}))
    assert isinstance(chosen, EntailmentSupportChecker)
    assert chosen.name == read_metadata().name
    features = wiring.support_checker(Settings.from_env({"CITADEL_SUPPORT_CHECKER": "features"}))
    assert isinstance(features, FeatureSupportChecker)
    with pytest.raises(ConfigError, match="CITADEL_SUPPORT_CHECKER"):
        Settings.from_env({"CITADEL_SUPPORT_CHECKER": "nli"})


def test_a_model_that_cannot_load_falls_back_to_features_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(wiring, "_warned", set())
    absent = tmp_path / "absent.onnx"
    settings = Settings.from_env({})
    broken = {
        **wiring.SUPPORT_CHECKERS,
        "entailment": lambda: loaded(EntailmentSupportChecker(model_path=absent)),
    }
    with caplog.at_level(logging.WARNING, logger="citadel.bootstrap.support"):
        first = wiring.support_checker(settings, checkers=broken)
        again = wiring.support_checker(settings, checkers=broken)
    assert isinstance(first, FeatureSupportChecker)
    assert isinstance(again, FeatureSupportChecker)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "absent.onnx" in warnings[0].getMessage()
    assert first.name in warnings[0].getMessage()


def test_pairs_run_side_by_side_give_what_they_give_one_after_another() -> None:
    passage = (
        "Index matrices must not contain negative indices. NA and zero values are allowed. "
        "A matrix can be indexed by a two-column matrix of row and column numbers."
    )
    pairs = [(f"Index matrices may hold {word} values.", passage) for word in WORDS]
    side_by_side = EntailmentSupportChecker(threads=2)
    one_by_one = EntailmentSupportChecker(threads=1)
    together = side_by_side.probabilities(pairs)
    assert [p.tolist() for p in together] == [p.tolist() for p in one_by_one.probabilities(pairs)]
    assert [p.tolist() for p in together] == [
        side_by_side.probabilities([pair])[0].tolist() for pair in pairs
    ]


def test_the_run_time_cut_keeps_the_segment_whole() -> None:
    """The run-time cut (``max_pieces``, shorter than training's) takes from the longest
    side, the passage."""
    info = read_metadata()
    assert info.max_pieces < 256 and "trained at 256" in info.provenance["max_pieces_note"]
    clauses = ", ".join(f"column {k} may hold NA or zero values" for k in range(60))
    long_passage = f"Index matrices must not contain negative indices, while {clauses}."
    negated = "Index matrices may contain negative indices."
    checker = EntailmentSupportChecker()
    loaded = checker._encoder._ensure_loaded()
    encoding = loaded.tokenizer.encode(negated, long_passage)
    assert len(encoding.ids) == info.max_pieces < len(long_passage.split())
    segment_pieces = loaded.tokenizer.encode(negated).ids
    assert encoding.ids[: len(segment_pieces)] == segment_pieces  # [CLS] segment [SEP], whole
    (support,) = checker.check([(negated, long_passage)])
    assert support.label is SupportLabel.CONTRADICTED


WORDS = ["negative", "zero", "NA", "missing", "complex", "character", "logical", "large", "odd"]


def test_metadata_too_deep_or_too_large_to_read_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    huge = tmp_path / "huge.json"
    huge.write_text(
        PACKAGED.joinpath("entailment.json")
        .read_text("utf-8")
        .replace('"max_pieces": 112', '"max_pieces": 1e400'),
        "utf-8",
    )
    for path in (deep, huge):
        with pytest.raises(EntailmentUnavailable, match=str(path.name)):
            read_metadata(path)


def test_a_huge_passage_is_read_as_its_chunk_sized_beginning() -> None:
    """The pair is cut by characters before the tokenizer's own cut (which grows with
    the square of the length): far past what the pieces kept span, so the result is
    the one of a passage already short."""
    segment = "Index matrices may contain negative indices."
    start = "Index matrices must not contain negative indices, but may contain NA. "
    checker = EntailmentSupportChecker()
    long_passage = start + "filler words " * 20_000
    short_passage = start + "filler words " * 100  # under the character cut
    (far,) = checker.probabilities([(segment, long_passage)])
    (near,) = checker.probabilities([(segment, short_passage)])
    assert np.allclose(far, near)
