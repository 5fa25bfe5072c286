"""What each MCP tool does, for one actor: the use cases the HTTP API calls, no others.

- ``search``: ``services.search`` (as ``POST /v1/search``).
- ``ask``: the answering use case (as ``POST /v1/answer``): the validated answer
  whose citations the resolver linked for this reader, or the degraded reason and
  the search results; each ask a turn of a conversation (``services.conversations``,
  as ``POST /v1/conversations``): a new one, or with ``conversation_id`` a follow-up
  of that one (the caller's own; another's is not found).
- ``get_passage``: a cited passage by ``answer_id`` and ``ref`` (the citation is
  looked up in the audit log and resolved again for the caller now, as
  ``GET /v1/answers/{id}/citations/{ref}`` does), or a found passage by its
  ``evidence_id``; either way the text is read through ``services.library``
  (``passage``, ``found_passage``), which checks the reader's access now as the
  viewer checks it (tenant, groups, deletion, retention).

Links are the resolver's, for the caller; its viewer routes are made whole under
``CITADEL_PUBLIC_URL`` when it is set (an agent over stdio has no server to
resolve a route against).

Errors are ``AppError``/``InvalidValue`` with messages written for the caller;
``server.dispatch`` turns them into MCP tool errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from citadel.app.answer import Answering, AnswerRequest
from citadel.app.errors import Forbidden, InvalidRequest, NotFound
from citadel.bootstrap import Services
from citadel.domain.answer import LinkState
from citadel.domain.search import SearchFilters, SearchMode, SearchRequest
from citadel.domain.users import Actor
from citadel.entrypoints.mcp.models import AskOutput, PassageOut, SearchOutput
from citadel.entrypoints.mcp.presenting import ask_output, passage_output, search_output
from citadel.entrypoints.present.public_links import absolute_link, absolute_links


@dataclass(frozen=True, slots=True)
class Filters:
    """The search filters a tool takes (empty fields do not restrict)."""

    source_ids: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    year_min: int | None = None
    year_max: int | None = None

    def domain(self) -> SearchFilters:
        return SearchFilters(
            source_ids=frozenset(self.source_ids),
            tags_any=frozenset(self.tags_any),
            year_min=self.year_min,
            year_max=self.year_max,
        )


class CitadelTools:
    """The tools' work over ``services``; ``answering`` is a remote Answer service in
    split mode (default: ``services.answer``), as for the HTTP edge."""

    def __init__(self, services: Services, answering: Answering | None = None) -> None:
        self.services = services
        self.answering: Answering = answering or services.answer

    def search(
        self, actor: Actor, query: str, limit: int, mode: SearchMode, filters: Filters
    ) -> SearchOutput:
        request = SearchRequest(query=query, limit=limit, filters=filters.domain(), mode=mode)
        return search_output(self.services.search.search(request, actor))

    async def ask(
        self,
        actor: Actor,
        question: str,
        limit: int,
        minimum_evidence_score: float,
        filters: Filters,
        *,
        conversation_id: str | None = None,
        request_id: str | None = None,
    ) -> AskOutput:
        """The answer, as a turn of a conversation: the one ``conversation_id`` names
        (a follow-up, its query built from the conversation), else a new one."""
        request = AnswerRequest(
            SearchRequest(query=question, limit=limit, filters=filters.domain()),
            minimum_evidence_score,
        )
        conversations = self.services.conversations.using(self.answering)
        deadline = self.services.settings.http.deadline_s
        if conversation_id:
            turn = await conversations.follow_up(
                actor, conversation_id, request, request_id=request_id, deadline_s=deadline
            )
        else:
            _, turn = await conversations.start(
                actor, request, request_id=request_id, deadline_s=deadline
            )
        result = absolute_links(turn.answer, self.services.settings.public_url)
        return ask_output(result, turn)

    def passage(
        self,
        actor: Actor,
        *,
        answer_id: str | None = None,
        ref: str | None = None,
        evidence_id: str | None = None,
    ) -> PassageOut:
        if answer_id and ref and not evidence_id:
            return self.cited_passage(actor, answer_id, ref)
        if evidence_id and not (answer_id or ref):
            return self.found_passage(actor, evidence_id)
        raise InvalidRequest("give either answer_id and ref (a citation), or evidence_id")

    def cited_passage(self, actor: Actor, answer_id: str, ref: str) -> PassageOut:
        """Citation ``ref`` of answer ``answer_id``, resolved for ``actor`` now."""
        services = self.services
        target = services.audit.target(answer_id, ref, actor)
        link = absolute_link(
            services.resolver.resolve([target], actor)[0], services.settings.public_url
        )
        if link.state is LinkState.FORBIDDEN:
            raise Forbidden(f"citation {ref} is of a source you may not see")
        if link.state is LinkState.DELETED:
            raise NotFound(f"the source of citation {ref} has been deleted")
        found = services.library.passage(target.source_id, target.version, target.chunk_id, actor)
        return passage_output(found.source, found.chunk, link=link, span=target.span)

    def found_passage(self, actor: Actor, evidence_id: str) -> PassageOut:
        """A passage by the ``evidence_id`` search gave (its chunk id), if ``actor`` may
        read it now; the library's rule (``LibraryService.found_passage``) decides."""
        found = self.services.library.found_passage(evidence_id, actor)
        return passage_output(found.source, found.chunk)
