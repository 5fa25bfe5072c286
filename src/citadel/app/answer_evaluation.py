"""Answer evaluation on a QA set: questions with a gold book and section, answered
through the normal ingest and answer use cases.

Each book the set names is ingested once (an unchanged book is a no-op), then every
question is answered as the given actor with the configured generator. A result,
or a citation, is *on the gold section* when its source is the gold book's and its
section path, joined by " / ", is the gold section or lies under it. The figures:

- search hit@1, hit@5 and MRR@10 over the answer's own search results (chunks);
- the share of questions whose answer cites the gold section at least once (a
  degraded answer cites nothing), and the share of all shown citations on it;
- degraded answers by reason, support labels when citations carry them, and the
  latency of the answer call (p50, p95);

overall and per book. Given questions the library does not answer too, the run
answers them over the same library and adds the abstention figures
(``abstention_evaluation``). Nothing here reads a file: the caller parses the set
(``parse_qa_lines``) and opens the books as documents.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from citadel.app.abstention_evaluation import (
    DEFAULT_THRESHOLDS,
    AbstentionReport,
    UnanswerableOutcome,
    UnanswerableQuestion,
    abstention_report,
    score_unanswerable,
)
from citadel.app.answer import Answering, AnswerRequest
from citadel.app.errors import InvalidRequest
from citadel.app.evaluation_lines import json_objects
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ports import IncomingDocument
from citadel.domain.answer import Answerability, AnswerResult, Citation
from citadel.domain.search import Evidence, SearchRequest
from citadel.domain.users import Actor

SECTION_SEPARATOR = " / "
SEARCH_LIMIT = 20
"""Results each answer searches for: what ``citadel ask`` asks by default."""
MRR_DEPTH = 10
QA_FIELDS = ("id", "question", "book", "section")


@dataclass(frozen=True, slots=True)
class QaQuestion:
    id: str
    question: str
    book: str
    """The gold book, as the caller names it (a path relative to the books folder)."""
    section: str
    """The gold section path, its headings joined by " / "."""


@dataclass(frozen=True, slots=True)
class QuestionOutcome:
    """What one question's answer did, measured against its gold section."""

    id: str
    book: str
    first_hit: int | None
    """1-based rank of the first search result on the gold section; None if none is."""
    citations: int
    """Citations shown (one per segment and ref)."""
    on_gold: int
    """How many of them are on the gold section."""
    degraded: str | None
    latency_ms: float
    support: tuple[str, ...] = ()
    """The support label of each shown citation, when citations carry one."""
    answerability: Answerability | None = None
    """The answerability decision on the result, when a scorer made one."""


@dataclass(frozen=True, slots=True)
class AnswerFigures:
    questions: int
    hit_at_1: float
    hit_at_5: float
    mrr_at_10: float
    answered: int
    answers_citing_gold: float
    """Share of the questions whose answer cites the gold section at least once."""
    citations: int
    citations_on_gold: float
    """Share of all shown citations that are on the gold section."""
    degraded: Mapping[str, int]
    support: Mapping[str, int]
    """Shown citations by support label; empty while citations carry no label."""
    latency_ms_p50: float
    latency_ms_p95: float


@dataclass(frozen=True, slots=True)
class AnswerEvaluationReport:
    books: int
    ingested: int
    """Books that became a new source or version (the rest were unchanged)."""
    ingest_seconds: float
    overall: AnswerFigures
    per_book: Mapping[str, AnswerFigures]
    outcomes: tuple[QuestionOutcome, ...] = field(default=())
    abstention: AbstentionReport | None = None
    """Present when the run was given questions the library does not answer."""


Progress = Callable[[str, int, int], None]
"""Called with (stage, done, total): a book's parse and embedding, then the answers."""


def parse_qa_lines(lines: Iterable[str]) -> tuple[QaQuestion, ...]:
    """A QA set in JSON lines, one object per line with string ``id``, ``question``,
    ``book`` and ``section``; blank lines are skipped. ``InvalidRequest`` names the
    first bad line, and a repeated id."""
    questions: list[QaQuestion] = []
    seen: set[str] = set()
    for number, row in json_objects(lines):
        values = [row.get(name) for name in QA_FIELDS]
        if not all(isinstance(v, str) and v.strip() for v in values):
            raise InvalidRequest(f"line {number}: needs non-empty strings {', '.join(QA_FIELDS)}")
        question = QaQuestion(*(str(v) for v in values))
        if question.id in seen:
            raise InvalidRequest(f"line {number}: id {question.id!r} is repeated")
        seen.add(question.id)
        questions.append(question)
    if not questions:
        raise InvalidRequest("the QA set has no questions")
    return tuple(questions)


def on_section(section_path: Sequence[str], gold: str) -> bool:
    """True when ``section_path`` is the gold section or a section under it."""
    joined = SECTION_SEPARATOR.join(section_path)
    return joined == gold or joined.startswith(gold + SECTION_SEPARATOR)


def support_label(citation: Citation) -> str | None:
    """The citation's support label; ``None`` where no support checker ran."""
    return citation.support.label.value if citation.support is not None else None


def score_answer(
    question: QaQuestion, gold_source: str, result: AnswerResult, latency_ms: float
) -> QuestionOutcome:
    """One answer against its gold section: the search rank, and the citations."""

    def gold(evidence: Evidence | None) -> bool:
        return (
            evidence is not None
            and evidence.source_id == gold_source
            and on_section(evidence.section_path, question.section)
        )

    first_hit = next(
        (rank for rank, e in enumerate(result.search.results, start=1) if gold(e)), None
    )
    evidence = {e.evidence_id: e for e in result.search.results}
    if result.manifest is not None:
        evidence.update({c.evidence.evidence_id: c.evidence for c in result.manifest.evidence})
    citations = [
        citation
        for segment in (result.answer.segments if result.answer is not None else ())
        for citation in segment.citations
    ]
    labels = tuple(label for c in citations if (label := support_label(c)) is not None)
    return QuestionOutcome(
        id=question.id,
        book=question.book,
        first_hit=first_hit,
        citations=len(citations),
        on_gold=sum(1 for c in citations if gold(evidence.get(c.evidence_id))),
        degraded=result.degraded.reason.value if result.degraded is not None else None,
        latency_ms=latency_ms,
        support=labels,
        answerability=result.answerability,
    )


def figures(outcomes: Sequence[QuestionOutcome]) -> AnswerFigures:
    """The figures over ``outcomes`` (all zero for none)."""
    count = len(outcomes)

    def share(hits: int, of: int) -> float:
        return hits / of if of else 0.0

    ranks = [o.first_hit for o in outcomes]
    citations = sum(o.citations for o in outcomes)
    timings = sorted(o.latency_ms for o in outcomes)
    mrr = sum(1 / r for r in ranks if r is not None and r <= MRR_DEPTH)
    return AnswerFigures(
        questions=count,
        hit_at_1=share(sum(1 for r in ranks if r == 1), count),
        hit_at_5=share(sum(1 for r in ranks if r is not None and r <= 5), count),
        mrr_at_10=mrr / count if count else 0.0,
        answered=sum(1 for o in outcomes if o.degraded is None),
        answers_citing_gold=share(sum(1 for o in outcomes if o.on_gold), count),
        citations=citations,
        citations_on_gold=share(sum(o.on_gold for o in outcomes), citations),
        degraded=dict(sorted(Counter(o.degraded for o in outcomes if o.degraded).items())),
        support=dict(sorted(Counter(label for o in outcomes for label in o.support).items())),
        latency_ms_p50=statistics.median(timings) if timings else 0.0,
        latency_ms_p95=timings[int(0.95 * (len(timings) - 1))] if timings else 0.0,
    )


def report_of(
    outcomes: Sequence[QuestionOutcome], *, books: int, ingested: int, ingest_seconds: float
) -> AnswerEvaluationReport:
    """Overall and per-book figures; books in the order the set first names them."""
    per_book: dict[str, list[QuestionOutcome]] = {}
    for outcome in outcomes:
        per_book.setdefault(outcome.book, []).append(outcome)
    return AnswerEvaluationReport(
        books=books,
        ingested=ingested,
        ingest_seconds=ingest_seconds,
        overall=figures(outcomes),
        per_book={book: figures(rows) for book, rows in per_book.items()},
        outcomes=tuple(outcomes),
    )


class AnswerEvaluation:
    def __init__(
        self,
        ingest: IngestService,
        answering: Answering,
        *,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._ingest = ingest
        self._answering = answering
        self._timer = timer

    async def run(
        self,
        questions: Sequence[QaQuestion],
        books: Mapping[str, IncomingDocument],
        actor: Actor,
        *,
        unanswerable: Sequence[UnanswerableQuestion] = (),
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        progress: Progress | None = None,
    ) -> AnswerEvaluationReport:
        """Ingest ``books`` (the set's book names → their documents) as ``actor``, in
        its tenant, then answer every question for ``actor``, and every ``unanswerable``
        one after them (its figures at ``thresholds``). ``IngestError`` when a book is
        refused; ``InvalidRequest`` when a question's book is not given, or an id is in
        both sets."""
        missing = sorted({q.book for q in questions} - set(books))
        if missing:
            raise InvalidRequest(f"no document for the book(s) {', '.join(missing)}")
        shared = sorted({q.id for q in questions} & {u.id for u in unanswerable})
        if shared:
            raise InvalidRequest(f"id(s) in both sets: {', '.join(shared[:5])}")
        started = self._timer()
        sources: dict[str, str] = {}
        ingested = 0
        for name, document in books.items():
            report = self._ingest.ingest(
                document,
                IngestOptions(tenant=actor.tenant),
                actor=actor,
                progress=_stage(progress, f"{name}: parsing"),
                embed_progress=_stage(progress, f"{name}: embedding"),
            )
            sources[name] = report.source_id
            ingested += report.status != "unchanged"
        ingest_seconds = self._timer() - started
        outcomes: list[QuestionOutcome] = []
        for index, question in enumerate(questions):
            result, latency_ms = await self._answer(question.question, actor)
            outcomes.append(score_answer(question, sources[question.book], result, latency_ms))
            if progress:
                progress("answering", index + 1, len(questions))
        unanswered: list[UnanswerableOutcome] = []
        for index, other in enumerate(unanswerable):
            result, latency_ms = await self._answer(other.question, actor)
            unanswered.append(score_unanswerable(other, result, latency_ms))
            if progress:
                progress("answering the unanswerable", index + 1, len(unanswerable))
        evaluated = report_of(
            outcomes, books=len(books), ingested=ingested, ingest_seconds=ingest_seconds
        )
        if not unanswerable:
            return evaluated
        abstention = abstention_report(
            [(o.book, o) for o in outcomes], unanswered, thresholds=thresholds
        )
        return replace(evaluated, abstention=abstention)

    async def _answer(self, question: str, actor: Actor) -> tuple[AnswerResult, float]:
        """The answer to ``question`` and how long the call took, in ms."""
        began = self._timer()
        result = await self._answering.answer(
            AnswerRequest(SearchRequest(query=question, limit=SEARCH_LIMIT)), actor
        )
        return result, (self._timer() - began) * 1000


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    return lambda done, total: progress(stage, done, total)
