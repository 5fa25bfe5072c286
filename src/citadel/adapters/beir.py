"""Reading a BEIR-format data set: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from citadel.app.errors import InvalidRequest
from citadel.app.evaluation import BeirDataset, BeirDocument


def load_beir(directory: Path, split: str) -> BeirDataset:
    """Load a BEIR directory; only the queries judged in ``split`` are kept."""
    corpus_path = directory / "corpus.jsonl"
    queries_path = directory / "queries.jsonl"
    qrels_path = directory / "qrels" / f"{split}.tsv"
    for path in (corpus_path, queries_path, qrels_path):
        if not path.is_file():
            raise InvalidRequest(f"not a BEIR directory: {path} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        header = next(rows, None)
        if header is None or [h.strip() for h in header[:2]] != ["query-id", "corpus-id"]:
            raise InvalidRequest(f"{qrels_path} does not start with a query-id/corpus-id header")
        for line, row in enumerate(rows, start=2):
            try:
                query_id, doc_id, grade = row[0], row[1], int(row[2])
            except (IndexError, ValueError):
                raise InvalidRequest(
                    f"{qrels_path}:{line}: expected query-id, corpus-id, score"
                ) from None
            qrels.setdefault(query_id, {})[doc_id] = grade
    queries = {
        str(item["_id"]): str(item["text"])
        for item in _jsonl(queries_path)
        if str(item["_id"]) in qrels
    }
    documents = tuple(
        BeirDocument(str(item["_id"]), str(item.get("title") or ""), str(item.get("text") or ""))
        for item in _jsonl(corpus_path)
    )
    return BeirDataset(documents=documents, queries=queries, qrels=qrels)


def _jsonl(path: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidRequest(f"{path}:{line_number}: not JSON ({exc.msg})") from exc
            if not isinstance(item, dict) or "_id" not in item:
                raise InvalidRequest(f"{path}:{line_number}: expected an object with an _id")
            out.append(item)
    return out
