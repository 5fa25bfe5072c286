"""Benchmark: the support policy (`label`, `drop`, `refuse`) on the QA set.

Every policy answers the same questions over one library through the code of
`citadel eval answers` (`AnswerEvaluation`: ingest once, answer each question as
the local administrator, score against the gold section), with the generator the
environment configures, the answer cache off. Per policy it reports answers shown
(and how many `limited`), degraded answers by reason, shown segments by support
label (a segment's strongest citation), shown segments no cited passage supports,
answers citing the gold section, citations on it, generation attempts (repairs)
and the answer call's latency p50/p95. For the extractive generator it also says
whether each policy's answers are the `label` run's answers.

`--rows FILE` writes every answer's segments with their labels, scores and cited
passages (JSON lines, one per policy and question) from which `--sample N` picks
N segments of each label a paraphrase can get (`supported`, `partial`,
`unsupported`, `contradicted`), spread evenly over all runs (each segment once),
for judging by hand (`--sample-out FILE`).

    # extractive (the default generator), the whole set:
    HF_HUB_OFFLINE=1 .venv/bin/python bench/support_policy.py --home /tmp/qa-home
    # a real model (see scripts/llm-dev), 40 questions stratified by book:
    scripts/llm-dev serve > /tmp/llm.log 2>&1 &
    eval "$(scripts/llm-dev env)"
    HF_HUB_OFFLINE=1 .venv/bin/python bench/support_policy.py --home /tmp/qa-home \\
        --questions 40 --rows /tmp/llm-rows.jsonl --sample 20 --sample-out /tmp/sample.jsonl

Paths default to the repository's QA set (`data/qa/books.jsonl`) and the shared
books (`../shared/books`); `--home` keeps the library (a re-run ingests nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from citadel.app.answer import Answering, AnswerRequest
from citadel.app.answer_evaluation import (
    AnswerEvaluation,
    AnswerEvaluationReport,
    QaQuestion,
    parse_qa_lines,
)
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.answer import AnswerResult
from citadel.domain.support import SupportLabel, SupportPolicy, strongest
from citadel.domain.users import Actor, Role

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_QA = ROOT / "data" / "qa" / "books.jsonl"
DEFAULT_BOOKS = ROOT.parent / "shared" / "books"
POLICIES = tuple(p.value for p in SupportPolicy)


def stratified(questions: Sequence[QaQuestion], total: int) -> tuple[QaQuestion, ...]:
    """``total`` questions, each book's share proportional to its count (largest
    remainder, ties to the book named first), evenly spaced in each book's file order."""
    by_book: dict[str, list[QaQuestion]] = {}
    for question in questions:
        by_book.setdefault(question.book, []).append(question)
    if total >= len(questions):
        return tuple(questions)
    exact = {book: total * len(rows) / len(questions) for book, rows in by_book.items()}
    share = {book: int(x) for book, x in exact.items()}
    order = sorted(by_book, key=lambda b: (-(exact[b] - share[b]), list(by_book).index(b)))
    for book in order[: total - sum(share.values())]:
        share[book] += 1
    kept: set[str] = set()
    for book, rows in by_book.items():
        n = share[book]
        kept.update(rows[int((i + 0.5) * len(rows) / n)].id for i in range(n))
    return tuple(q for q in questions if q.id in kept)


class MemoProvider:
    """A loopback proxy in front of the OpenAI-compatible provider that answers a
    request it has seen (same path, same body) with the recorded response.

    The prompt asks for temperature 0, so the provider's answer to an identical
    request is the same completion: the ``drop`` and ``refuse`` runs replay the
    ``label`` run's first attempts, and ``refuse`` replays ``drop``'s repairs, so
    only new requests reach the model. ``replayed_s`` sums the provider time the
    replays stand for; the report adds it back to each answer's latency. A
    response that took longer than ``deadline_s`` is replayed after that long, so
    the client gives up on it again."""

    def __init__(self, upstream: str, deadline_s: float) -> None:
        self.upstream = upstream.rstrip("/")
        self.deadline_s = deadline_s
        self.replayed_s = 0.0
        self.calls = 0
        self.replays = 0
        self._seen: dict[tuple[str, bytes], tuple[int, str, bytes, float]] = {}
        self._lock = threading.Lock()

    def forward(self, path: str, body: bytes) -> tuple[int, str, bytes]:
        key = (path, body)
        with self._lock:
            self.calls += 1
            known = self._seen.get(key)
            if known is not None:
                self.replays += 1
                if known[3] < self.deadline_s:  # a longer one is slept, so measured
                    self.replayed_s += known[3]
        if known is not None:
            if known[3] >= self.deadline_s:
                time.sleep(self.deadline_s + 1)
            return known[0], known[1], known[2]
        started = time.perf_counter()
        request = urllib.request.Request(
            self.upstream + path,
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                status, kind, data = (
                    response.status,
                    response.headers.get_content_type(),
                    (response.read()),
                )
        except urllib.error.HTTPError as exc:
            status, kind, data = exc.code, exc.headers.get_content_type(), exc.read()
        seconds = time.perf_counter() - started
        with self._lock:
            self._seen[key] = (status, kind, data, seconds)
        return status, kind, data


@contextlib.contextmanager
def memo_provider(upstream: str, deadline_s: float) -> Iterator[tuple[str, MemoProvider]]:
    """The proxy served on a free loopback port; yields its base URL and itself."""
    memo = MemoProvider(upstream, deadline_s)
    prefix = upstream.rstrip("/").split("/", 3)[3] if upstream.count("/") >= 3 else ""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.removeprefix("/" + prefix) if prefix else self.path
            status, kind, data = memo.forward(path, body)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up (its deadline)
                self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{prefix}".rstrip("/"), memo
    finally:
        server.shutdown()
        server.server_close()


class Recording:
    """The answer use case, keeping every result (``AnswerEvaluation`` scores them)
    and, with a ``MemoProvider``, the provider time each answer's replays stand for."""

    def __init__(self, inner: Answering, memo: MemoProvider | None = None) -> None:
        self._inner = inner
        self._memo = memo
        self.results: list[AnswerResult] = []
        self.replayed_s: list[float] = []

    async def answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> AnswerResult:
        before = self._memo.replayed_s if self._memo else 0.0
        result = await self._inner.answer(
            request, actor, request_id=request_id, deadline_s=deadline_s
        )
        self.results.append(result)
        self.replayed_s.append((self._memo.replayed_s if self._memo else 0.0) - before)
        return result


def run_policy(
    settings: Settings,
    questions: Sequence[QaQuestion],
    books: Path,
    home: Path,
    memo: MemoProvider | None = None,
) -> tuple[AnswerEvaluationReport, Recording]:
    """The questions answered under ``settings`` through ``AnswerEvaluation``, as
    ``citadel eval answers`` wires it (``entrypoints/cli/evaluation.py``)."""
    services = build(replace(settings, home=home, db=""))
    try:
        names = dict.fromkeys(q.book for q in questions)
        documents = {name: services.documents.open(books / name) for name in names}
        recording = Recording(services.answer, memo)
        actor = Actor(user_id="local", tenant=settings.tenant, role=Role.ADMIN)

        def tick(stage: str, done: int, total: int) -> None:
            if stage == "answering" and (done % 10 == 0 or done == total):
                print(f"  {settings.support_policy}: {done}/{total}", file=sys.stderr)

        report = asyncio.run(
            AnswerEvaluation(services.ingest, recording).run(
                questions, documents, actor, progress=tick
            )
        )
        return report, recording
    finally:
        services.close()


def answer_rows(
    policy: str, report: AnswerEvaluationReport, recording: Recording
) -> list[dict[str, object]]:
    """One row per question: what was shown, with each segment's labels and passages."""
    rows: list[dict[str, object]] = []
    for outcome, result, replayed_s in zip(
        report.outcomes, recording.results, recording.replayed_s, strict=True
    ):
        manifest = result.manifest
        segments = []
        for segment in result.answer.segments if result.answer is not None else ():
            labels = [c.support.label for c in segment.citations if c.support is not None]
            passages = {}
            for citation in segment.citations:
                evidence = manifest.evidence_for(citation.ref) if manifest else None
                passages[citation.ref] = evidence.passage if evidence else ""
            segments.append(
                {
                    "text": segment.text,
                    "label": strongest(labels).value if labels else None,
                    "citations": [
                        {
                            "ref": c.ref,
                            "section": c.section,
                            "label": c.support.label.value if c.support else None,
                            "score": round(c.support.score, 3) if c.support else None,
                        }
                        for c in segment.citations
                    ],
                    "passages": passages,
                }
            )
        record = result.generation
        rows.append(
            {
                "policy": policy,
                "id": outcome.id,
                "book": outcome.book,
                "question": result.search.query,
                "degraded": outcome.degraded,
                "detail": result.degraded.detail if result.degraded else "",
                "limited": bool(result.answer and result.answer.limited),
                "attempts": record.attempts if record else 0,
                "on_gold": outcome.on_gold,
                "citations": outcome.citations,
                "latency_ms": round(outcome.latency_ms, 1),
                "replayed_provider_ms": round(replayed_s * 1000, 1),
                "segments": segments,
            }
        )
    return rows


def summary(
    policy: str, report: AnswerEvaluationReport, rows: Sequence[dict[str, object]]
) -> dict[str, object]:
    overall = report.overall
    segment_labels: Counter[str] = Counter()
    for row in rows:
        for segment in row["segments"]:  # type: ignore[attr-defined]
            segment_labels[segment["label"] or "none"] += 1
    attempts = Counter(int(str(row["attempts"])) for row in rows)
    # The answer call's latency with the provider time of replayed requests added back
    # (equal to the evaluation's own figures when nothing was replayed).
    timings = sorted(
        float(str(row["latency_ms"])) + float(str(row["replayed_provider_ms"])) for row in rows
    )
    return {
        "policy": policy,
        "questions": overall.questions,
        "answers_shown": overall.answered,
        "limited": sum(1 for row in rows if row["limited"]),
        "degraded": dict(overall.degraded),
        "segments_shown": sum(segment_labels.values()),
        "segments_by_label": {
            label.value: segment_labels[label.value]
            for label in SupportLabel
            if segment_labels[label.value]
        },
        "shown_unsupported": segment_labels[SupportLabel.UNSUPPORTED.value],
        "shown_contradicted": segment_labels[SupportLabel.CONTRADICTED.value],
        "citations_by_label": dict(overall.support),
        "answers_citing_gold": round(overall.answers_citing_gold, 3),
        "citations": overall.citations,
        "citations_on_gold": round(overall.citations_on_gold, 3),
        "generation_attempts": sum(n * count for n, count in attempts.items()),
        "answers_by_attempts": dict(sorted(attempts.items())),
        "latency_ms_p50": round(statistics.median(timings), 1),
        "latency_ms_p95": round(timings[int(0.95 * (len(timings) - 1))], 1),
        "replayed_provider_s": round(
            sum(float(str(row["replayed_provider_ms"])) for row in rows) / 1000, 1
        ),
    }


def same_answers(rows: Sequence[dict[str, object]], base: Sequence[dict[str, object]]) -> int:
    """Questions whose shown segments (texts and labels) equal ``base``'s, degraded alike."""

    def shape(row: dict[str, object]) -> object:
        segments = row["segments"]
        return row["degraded"], [(s["text"], s["label"]) for s in segments]  # type: ignore[attr-defined]

    return sum(1 for a, b in zip(rows, base, strict=True) if shape(a) == shape(b))


JUDGED = ("supported", "partial", "unsupported", "contradicted")
"""The labels a sample is drawn from: every label a paraphrase can get."""


def sample(rows: Sequence[dict[str, object]], per_label: int) -> list[dict[str, object]]:
    """``per_label`` segments of each label in ``JUDGED``, evenly spread over the rows
    in order (a segment shown by several policies counts once); each with its
    question and cited passage(s)."""
    found: dict[str, list[dict[str, object]]] = {label: [] for label in JUDGED}
    seen: set[tuple[object, str]] = set()
    for row in rows:
        for segment in row["segments"]:  # type: ignore[attr-defined]
            key = (row["id"], segment["text"])
            if segment["label"] in found and key not in seen:
                seen.add(key)
                found[segment["label"]].append(
                    {
                        "id": row["id"],
                        "policy": row["policy"],
                        "question": row["question"],
                        "label": segment["label"],
                        "scores": [c["score"] for c in segment["citations"]],
                        "segment": segment["text"],
                        "passages": segment["passages"],
                    }
                )
    picked: list[dict[str, object]] = []
    for items in found.values():
        n = min(per_label, len(items))
        picked.extend(items[int((i + 0.5) * len(items) / n)] for i in range(n))
    return picked


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--qa", type=Path, default=DEFAULT_QA, help="the QA set (JSON lines)")
    parser.add_argument("--books", type=Path, default=DEFAULT_BOOKS, help="the books folder")
    parser.add_argument("--home", type=Path, help="keep the library here (re-runs skip ingest)")
    parser.add_argument("--questions", type=int, help="a subset of N questions, stratified by book")
    parser.add_argument(
        "--complement",
        action="store_true",
        help="with --questions N: the questions that subset leaves out (a set disjoint from"
        " an earlier run's, to judge a checker trained after it)",
    )
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated")
    parser.add_argument("--rows", type=Path, help="write every answer's segments here")
    parser.add_argument("--sample", type=int, default=0, help="segments per label to judge")
    parser.add_argument("--sample-out", type=Path, help="where the sample goes (JSON lines)")
    parser.add_argument(
        "--memo-provider",
        action="store_true",
        help="replay identical provider requests across policies (temperature 0)",
    )
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON")
    args = parser.parse_args()
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if unknown := set(policies) - set(POLICIES):
        sys.exit(f"unknown policies: {', '.join(sorted(unknown))}")
    questions = parse_qa_lines(args.qa.read_text(encoding="utf-8").splitlines())
    if args.complement and not args.questions:
        parser.error("--complement needs --questions N")
    if args.questions:
        subset = stratified(questions, args.questions)
        if args.complement:
            taken = {q.id for q in subset}
            subset = tuple(q for q in questions if q.id not in taken)
        questions = subset
    env = dict(os.environ)
    env["CITADEL_ANSWER_CACHE_SIZE"] = "0"  # every question reaches the generator
    started = time.time()
    load = [os.getloadavg()[0]]
    summaries: list[dict[str, object]] = []
    all_rows: dict[str, list[dict[str, object]]] = {}
    with contextlib.ExitStack() as stack:
        home = args.home or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        memo: MemoProvider | None = None
        if args.memo_provider:
            deadline_s = Settings.from_env(env).limits.generator_deadline_s
            url, memo = stack.enter_context(memo_provider(env["CITADEL_LLM_BASE_URL"], deadline_s))
            env["CITADEL_LLM_BASE_URL"] = url
        for policy in policies:
            env["CITADEL_SUPPORT_POLICY"] = policy
            settings = Settings.from_env(env)
            report, recording = run_policy(settings, questions, args.books, home, memo)
            rows = answer_rows(policy, report, recording)
            all_rows[policy] = rows
            summaries.append(summary(policy, report, rows))
            load.append(os.getloadavg()[0])
    if "label" in all_rows:
        for entry in summaries:
            policy = str(entry["policy"])
            entry["same_answers_as_label"] = same_answers(all_rows[policy], all_rows["label"])
    meta = {
        "generator": settings.generator,
        "model": env.get("CITADEL_LLM_MODEL", "") if settings.generator == "openai" else "",
        "questions": len(questions),
        "per_book": dict(Counter(q.book for q in questions)),
        "minutes": round((time.time() - started) / 60, 1),
        "load_1min": [round(x, 1) for x in load],
        "deadline_s": settings.limits.generator_deadline_s,
        "max_evidence": settings.limits.max_evidence,
        "provider_calls": memo.calls if memo else None,
        "provider_replays": memo.replays if memo else None,
    }
    if args.rows:
        with args.rows.open("w", encoding="utf-8") as out:
            for rows in all_rows.values():
                out.writelines(json.dumps(row) + "\n" for row in rows)
    if args.sample:
        picked = sample([row for rows in all_rows.values() for row in rows], args.sample)
        if args.sample_out:
            with args.sample_out.open("w", encoding="utf-8") as out:
                out.writelines(json.dumps(item) + "\n" for item in picked)
    if args.json:
        print(json.dumps({"meta": meta, "policies": summaries}, indent=1))
        return
    print(json.dumps(meta))
    keys = [k for k in summaries[0] if k != "policy"]
    print(f"{'':24}" + "".join(f"{s['policy']:>26}" for s in summaries))
    for key in keys:
        values = "".join(f"{json.dumps(s.get(key)):>26}" for s in summaries)
        print(f"{key:24}{values}")


if __name__ == "__main__":
    main()
