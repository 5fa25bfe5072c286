"""A conversation turn as the columns the SQLite and PostgreSQL stores keep.

The recorded answer is stored as the ``citadel.v1`` ``AnswerResponse`` message
(``wire.convert``): the one encoding of a whole answer the project already keeps
stable, so a reopened turn is the answer given, field for field, under its own id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from citadel.domain.conversation import Turn
from citadel.domain.rewrite import QueryRewrite, RewriteKind
from citadel.wire.convert import answer_result_from_wire, answer_result_to_wire
from citadel.wire.gen import answer_pb2 as apb


@dataclass(frozen=True, slots=True)
class TurnRow:
    conversation_id: str
    number: int
    question: str
    query: str
    rewrite: str
    answer_id: str
    answer: bytes
    created: str


def turn_row(turn: Turn) -> TurnRow:
    return TurnRow(
        conversation_id=turn.conversation_id,
        number=turn.number,
        question=turn.rewrite.question,
        query=turn.rewrite.query,
        rewrite=turn.rewrite.kind.value,
        answer_id=turn.answer_id,
        answer=answer_result_to_wire(turn.answer).SerializeToString(deterministic=True),
        created=turn.created,
    )


def turn_of_row(row: TurnRow) -> Turn:
    rewrite = QueryRewrite(row.question, row.query, RewriteKind(row.rewrite))
    message = apb.AnswerResponse()
    message.ParseFromString(bytes(row.answer))
    answer = replace(answer_result_from_wire(message), rewrite=rewrite)
    return Turn(row.conversation_id, row.number, rewrite, answer, row.created)


def turn_of_values(values: Sequence[object]) -> Turn:
    """The turn of one row selected as ``TURN_COLUMNS`` (either database's driver)."""
    cid, number, question, query, rewrite, answer_id, answer, created = values[:8]
    if not isinstance(answer, bytes | bytearray | memoryview) or not isinstance(number, int):
        raise ValueError("a stored turn has a number and the bytes of its answer")
    row = TurnRow(
        str(cid),
        number,
        str(question),
        str(query),
        str(rewrite),
        str(answer_id),
        bytes(answer),
        str(created),
    )
    return turn_of_row(row)


TURN_COLUMNS = "conversation_id, number, question, query, rewrite, answer_id, answer, created"
CONVERSATION_COLUMNS = "conversation_id, owner, tenant, title, created"
