"""``citadel chat``: a question and its follow-ups, one a line on stdin.

Each line is a turn of one conversation (``ConversationService``): the first starts
it (or ``--conversation ID`` continues one), each next one is a follow-up whose
search query is built from the conversation. Every turn is printed as ``citadel ask``
prints an answer, after ``searched for: …`` when its query was rewritten; with
``--json``, one JSON object per turn (the turn's shape, with its conversation id).
An empty line or the end of the input ends the conversation. ``--list`` and
``--delete ID`` manage the acting user's conversations.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from typing import Annotated, TextIO

import typer

from citadel.app.answer import AnswerRequest
from citadel.app.conversations import ConversationService
from citadel.app.errors import AppError
from citadel.domain.errors import DomainError
from citadel.domain.request_defaults import ANSWER_RESULTS, EVIDENCE_FLOOR
from citadel.domain.search import SearchFilters, SearchRequest
from citadel.domain.users import Actor
from citadel.entrypoints.cli.filters import (
    SourceOption,
    TagOption,
    YearFromOption,
    YearToOption,
    search_filters,
    whole,
)
from citadel.entrypoints.cli.support import (
    AsOption,
    HomeOption,
    JsonFlag,
    actor_for,
    emit,
    err,
    open_services,
    print_error,
    require_books,
)
from citadel.entrypoints.cli.text import answer_text, terminal_safe
from citadel.entrypoints.present.public_links import absolute_links
from citadel.entrypoints.present.shapes import conversation_json, turn_json

PROMPT = "? "
"""Written to stderr before each question when stdin is a terminal."""


def next_question(stream: TextIO) -> str:
    """The next question: a line of ``stream``; empty at an empty line or its end."""
    if stream.isatty():
        sys.stderr.write(PROMPT)
        sys.stderr.flush()
    return stream.readline().strip()


def chat(
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            metavar="ID",
            help="Continue this conversation (its id from `citadel chat --list`).",
        ),
    ] = None,
    list_them: Annotated[
        bool,
        typer.Option("--list", help="List your conversations, newest first, and exit."),
    ] = False,
    delete: Annotated[
        str | None,
        typer.Option("--delete", metavar="ID", help="Delete this conversation and exit."),
    ] = None,
    generator: Annotated[
        str | None,
        typer.Option(help="extractive (default, no LLM) or openai (needs CITADEL_LLM_*)."),
    ] = None,
    minimum_evidence_score: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Score floor for evidence, in [0, 1].")
    ] = EVIDENCE_FLOOR,
    limit: Annotated[
        int,
        typer.Option(
            parser=whole(ANSWER_RESULTS.low, ANSWER_RESULTS.high, "limit"),
            help=f"Search results to consider, {ANSWER_RESULTS.low}–{ANSWER_RESULTS.high}.",
        ),
    ] = ANSWER_RESULTS.default,
    source: SourceOption = None,
    tag: TagOption = None,
    year_from: YearFromOption = None,
    year_to: YearToOption = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Ask a question and follow-ups, one a line on stdin (an empty line or EOF ends).

    Each follow-up searches for its words plus the conversation's where it leans on
    it ("and its default?"); that query is printed as "searched for: …".
    """
    if sum((list_them, delete is not None, conversation is not None)) > 1:
        err.print("[red]error:[/red] use one of --list, --delete and --conversation")
        raise typer.Exit(2)
    filters = search_filters(source, tag, year_from, year_to)
    with open_services(home, generator, reading=True) as services:
        actor = actor_for(services, as_user)
        conversations = services.conversations
        if list_them:
            _list(conversations, actor, json_out)
            return
        if delete is not None:
            try:
                conversations.delete(actor, delete)
            except AppError as exc:
                print_error(exc)
                raise typer.Exit(1) from exc
            if json_out:
                emit({"conversation_id": delete, "deleted": True})
            else:
                print(f"deleted conversation {terminal_safe(delete)}")
            return
        require_books(services, actor)
        if conversation is not None:
            try:
                conversations.open(actor, conversation)
            except AppError as exc:
                print_error(exc)
                raise typer.Exit(1) from exc
        turns = Turns(
            conversations,
            actor,
            conversation,
            json_out=json_out,
            viewer_links=as_user is not None,
            public_url=services.settings.public_url,
        )
        try:
            failed = asyncio.run(turns.run(sys.stdin, filters, limit, minimum_evidence_score))
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
    if failed:
        raise typer.Exit(1)


class Turns:
    """One ``chat`` session: each question a turn of the same conversation."""

    def __init__(
        self,
        conversations: ConversationService,
        actor: Actor,
        conversation_id: str | None,
        *,
        json_out: bool,
        viewer_links: bool,
        public_url: str,
    ) -> None:
        self._conversations = conversations
        self._actor = actor
        self.conversation_id = conversation_id
        self._json = json_out
        self._viewer_links = viewer_links
        self._public_url = public_url

    async def run(self, stream: TextIO, filters: SearchFilters, limit: int, floor: float) -> int:
        """Ask each line of ``stream`` until an empty one or its end; the turns that failed."""
        failed = 0
        while question := await asyncio.to_thread(next_question, stream):
            search = SearchRequest(query=question, limit=limit, filters=filters)
            try:
                await self.ask(AnswerRequest(search, floor))
            except (AppError, DomainError) as exc:
                # One question refused (too long, a lost conversation): said, and the
                # next line is still asked; the exit status says some failed.
                print_error(exc)
                failed += 1
        return failed

    async def ask(self, request: AnswerRequest) -> None:
        if self.conversation_id is None:
            started, turn = await self._conversations.start(self._actor, request)
            self.conversation_id = started.conversation_id
            if not self._json:
                err.print(
                    f"conversation {started.conversation_id} (continue it with"
                    f" `citadel chat --conversation {started.conversation_id}`)",
                    soft_wrap=True,
                    highlight=False,
                )
        else:
            turn = await self._conversations.follow_up(self._actor, self.conversation_id, request)
        turn = replace(turn, answer=absolute_links(turn.answer, self._public_url))
        if self._json:
            emit({"conversation_id": self.conversation_id, **turn_json(turn)})
        else:
            if turn.rewrite.rewritten:
                print(terminal_safe(f"searched for: {turn.query}"))
            shown = answer_text(
                turn.answer, viewer_links=self._viewer_links, public_url=self._public_url
            )
            print(terminal_safe(shown) + "\n")
        sys.stdout.flush()


def _list(conversations: ConversationService, actor: Actor, json_out: bool) -> None:
    found = conversations.list(actor)
    if json_out:
        emit({"items": [conversation_json(c) for c in found]})
    elif not found:
        print("No conversations.")
    else:
        for c in found:
            print(terminal_safe(f"{c.conversation_id}  {c.created}  {c.title}"))
