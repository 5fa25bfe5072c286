"""Benchmark: the support checker against model-written answer segments judged by hand.

Each line of ``--judged`` (default: the SmolLM2-135M answers of 2026-12-03,
``data/support/judged/``) is one segment a real model showed, with its citations and
a gold label per segment (SUPPORT, PARTIAL_SUPPORT, NEI, CONTRADICT) that a person
gave against the cited passages. A citation carries its whole ``passage``, or names
it by its opening (``passage_start``): then the passage is the chunk of
``--chunks DIR`` (``citadel sources chunks SOURCE_ID --json``, one ``<book>.jsonl``
per book) whose text starts with it, so the checker sees what it saw in the answer.

The checker labels every (segment, passage) pair and the segment takes the
strongest label of its citations (``domain.support.strongest``, as the support step
does). Printed: the confusion of checker label against gold, the share of
``supported`` labels that are wrong (gold not SUPPORT: the issue's "at most 20%"),
and what ``drop`` would keep. Run::

    .venv/bin/python bench/support_judged.py [--judged FILE]... --chunks CHUNKS \
        [--checker features] [--json]

The judged segments are evaluation data only: no checker is trained on them.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from citadel.adapters.support import default_checker
from citadel.adapters.support.entailment import EntailmentSupportChecker
from citadel.app.ports.support import SupportChecker
from citadel.domain.support import NOT_BACKED, SupportLabel, strongest

JUDGED = Path("data/support/judged/smollm2-answers-2026-12-03.jsonl")
GOLDS = ("SUPPORT", "PARTIAL_SUPPORT", "NEI", "CONTRADICT")


def load_passages(directory: Path) -> list[str]:
    texts = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                texts.append(json.loads(line)["text"])
    return texts


def passage_for(start: str, texts: list[str]) -> str:
    found = [t for t in texts if t.startswith(start)]
    if not found:
        raise SystemExit(f"no chunk starts with {start[:60]!r}: is --chunks the right library?")
    return min(found, key=len)  # the shortest chunk with this opening: the one cited


def label_segments(
    checker: SupportChecker, rows: list[dict], texts: list[str]
) -> list[SupportLabel]:
    labels = []
    for row in rows:
        passages = [
            c.get("passage") or passage_for(c["passage_start"], texts) for c in row["citations"]
        ]
        found = checker.check([(row["segment"], p) for p in passages])
        labels.append(strongest([s.label for s in found]))
    return labels


def report(rows: list[dict], labels: list[SupportLabel]) -> dict[str, object]:
    confusion: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row, label in zip(rows, labels, strict=True):
        confusion[label.value][row["gold"]] += 1
    supported = confusion.get(SupportLabel.SUPPORTED.value, collections.Counter())
    shown_supported = sum(supported.values())
    kept = [r["gold"] for r, lab in zip(rows, labels, strict=True) if lab not in NOT_BACKED]
    return {
        "segments": len(rows),
        "confusion": {k: {g: v[g] for g in GOLDS} for k, v in sorted(confusion.items())},
        "supported_labels": shown_supported,
        "supported_wrong": shown_supported - supported["SUPPORT"],
        "supported_wrong_share": (
            round((shown_supported - supported["SUPPORT"]) / shown_supported, 3)
            if shown_supported
            else None
        ),
        "drop_keeps": dict(collections.Counter(kept)),
        "drop_removes_supported": sum(
            1
            for r, lab in zip(rows, labels, strict=True)
            if lab in NOT_BACKED and r["gold"] == "SUPPORT"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--judged", type=Path, action="append", help=f"repeatable (default: {JUDGED})"
    )
    parser.add_argument("--chunks", type=Path, help="needed for citations without a passage")
    parser.add_argument("--checker", choices=["entailment", "features"], default="entailment")
    parser.add_argument(
        "--metadata",
        type=Path,
        help="entailment: this entailment.json instead of the packaged one (a candidate "
        "layer or thresholds, tried before they are installed)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [
        json.loads(line)
        for path in args.judged or [JUDGED]
        for line in path.read_text("utf-8").splitlines()
        if line
    ]
    checker: SupportChecker = (
        EntailmentSupportChecker(metadata_path=args.metadata)
        if args.checker == "entailment"
        else default_checker()
    )
    labels = label_segments(checker, rows, load_passages(args.chunks) if args.chunks else [])
    result = {"checker": checker.name, **report(rows, labels)}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{result['checker']}: {result['segments']} segments judged by hand")
    print(f"{'checker label':14}" + "".join(f"{g:>17}" for g in GOLDS))
    for label, golds in result["confusion"].items():  # type: ignore[union-attr]
        print(f"{label:14}" + "".join(f"{golds[g]:>17}" for g in GOLDS))
    print(
        f"supported labels wrong: {result['supported_wrong']} of {result['supported_labels']}"
        f" ({result['supported_wrong_share']}); drop keeps {result['drop_keeps']},"
        f" removes {result['drop_removes_supported']} supported"
    )


if __name__ == "__main__":
    main()
