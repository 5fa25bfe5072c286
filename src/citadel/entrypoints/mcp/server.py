"""The MCP server: three read-only tools over citadel's use cases, and who calls them.

Each tool call goes through ``dispatch``, the one place a call is run: it asks
the transport's ``Caller`` who is calling (looked up now, on every call), runs
the tool's work for that actor in a worker thread or on the loop, and turns any
failure into an MCP tool error whose message is written for the caller — never
a stack trace, never the text of a source the caller may not read. Unexpected
failures are logged (stderr) and reported as ``internal error``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Protocol, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from citadel import package_version
from citadel.app.errors import AppError
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.config import ConfigError
from citadel.domain.errors import InvalidValue
from citadel.domain.integers import YEAR_MAX, YEAR_MIN
from citadel.domain.request_defaults import ANSWER_RESULTS, EVIDENCE_FLOOR, SEARCH_RESULTS
from citadel.domain.search import SearchMode
from citadel.domain.users import Actor
from citadel.entrypoints.mcp.arguments import CitadelServer, strict_arguments
from citadel.entrypoints.mcp.markdown import tool_result
from citadel.entrypoints.mcp.models import AskOutput, PassageOut, SearchOutput
from citadel.entrypoints.mcp.tools import CitadelTools, Filters

T = TypeVar("T")

log = logging.getLogger("citadel.mcp")

INSTRUCTIONS = (
    "citadel answers questions over a library of technical books with citations the"
    " application proves. `search` finds passages; `ask` answers with citations, each"
    " checked against its passage and linked by citadel's resolver for you (use only"
    " those links; pass an answer's conversation_id to ask a follow-up); `get_passage`"
    " reads a cited passage (answer_id and ref) or a found one (evidence_id). You see"
    " only the sources you may read."
)


class Caller(Protocol):
    """Who is calling: the actor a tool call runs for, looked up now. ``request`` is
    the transport's request (the HTTP request for streamable HTTP, None on stdio)."""

    def __call__(self, request: Any | None) -> Actor: ...


class Fixed:
    """The caller of a stdio server: the user named by ``--as`` (looked up again on
    every call, so a disabled user or a changed group counts at once), or the local
    administrator when none was named."""

    def __init__(self, lookup: Callable[[], Actor]) -> None:
        self._lookup = lookup

    def __call__(self, request: Any | None) -> Actor:
        return self._lookup()


def tool_message(exc: Exception) -> str:
    """What the caller is told about ``exc``: the application's own message for its
    errors (written for callers: the HTTP API's error bodies carry the same), a fixed
    one for anything else (its details go to the log only)."""
    if isinstance(exc, ConfigError):
        return "the server is misconfigured"
    if isinstance(exc, InvalidValue) or (isinstance(exc, AppError) and type(exc) is not AppError):
        return str(exc)
    return INTERNAL


INTERNAL = "internal error"


async def dispatch(
    tool: str,
    ctx: Context[Any, Any],
    caller: Caller,
    work: Callable[[Actor, Any | None], Awaitable[T]],
    tracer: Tracer | None = None,
) -> T:
    """Run one call of ``tool``: the caller now, then ``work(actor, request)``; every
    failure becomes a ``ToolError`` with ``tool_message``'s text. Every tool call of
    every transport passes here once, as one span (``tools/call TOOL``; over HTTP
    inside the request's)."""
    request = ctx.request_context.request
    attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool}
    with (tracer or NullTracer()).span(f"tools/call {tool}", kind="server") as span:
        span.set(**attributes)
        try:
            actor = await run_in_threadpool(caller, request)
            return await work(actor, request)
        except ToolError:
            raise
        except Exception as exc:
            message = tool_message(exc)
            if message == INTERNAL or isinstance(exc, ConfigError):
                log.error(
                    "MCP tool %s failed", tool, extra={"error": type(exc).__name__}, exc_info=True
                )
            span.fail(type(exc).__name__)
            raise ToolError(message) from None


def request_id_of(request: Any | None) -> str | None:
    """The HTTP request's id (``X-Request-ID``, set by the edge), for the audit record."""
    state = getattr(request, "state", None)
    value = getattr(state, "request_id", None)
    return value if isinstance(value, str) else None


Query = Annotated[str, Field(min_length=1, max_length=2000, description="What to look for")]
Question = Annotated[str, Field(min_length=1, max_length=2000, description="The question")]
Limit = Annotated[
    int, Field(ge=SEARCH_RESULTS.low, le=SEARCH_RESULTS.high, description="How many results")
]
AskLimit = Annotated[
    int,
    Field(ge=ANSWER_RESULTS.low, le=ANSWER_RESULTS.high, description="Search results to consider"),
]
Floor = Annotated[float, Field(ge=0.0, le=1.0, description="Score floor for evidence")]
Ids = Annotated[
    list[str] | None,
    Field(max_length=100, description="Only these sources (their ids); empty: all"),
]
Tags = Annotated[
    list[str] | None, Field(max_length=100, description="Only sources with any of these tags")
]
Year = Annotated[int | None, Field(ge=YEAR_MIN, le=YEAR_MAX, description="Publication year bound")]
Mode = Annotated[SearchMode, Field(description="Which retrieval", strict=False)]
Ref = Annotated[str | None, Field(max_length=64, description="A citation's ref (with answer_id)")]
AnswerId = Annotated[
    str | None, Field(max_length=128, description="The answer_id of an ask result")
]
ConversationId = Annotated[
    str | None,
    Field(
        max_length=128,
        description="Ask a follow-up in this conversation (the conversation_id an earlier"
        " ask returned); without it, a new conversation starts",
    ),
]
EvidenceId = Annotated[
    str | None,
    Field(max_length=256, description="A search result's evidence_id (instead of a citation)"),
]

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def build_server(tools: CitadelTools, caller: Caller) -> MCPServer[Any]:
    """The MCP server with ``search``, ``ask`` and ``get_passage``, each run for
    ``caller`` through ``dispatch``."""
    tracer = tools.services.tracer
    server: MCPServer[Any] = CitadelServer(
        "citadel",
        title="citadel",
        version=package_version(),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    @server.tool(
        name="search",
        title="Search the library",
        description=(
            "Search the books you may read. Each result: title, chapter, section, printed"
            " pages, score in [0, 1], the passage, and its evidence_id (for get_passage)."
        ),
        annotations=_READ_ONLY,
    )
    async def search(
        query: Query,
        ctx: Context[Any, Any],
        limit: Limit = SEARCH_RESULTS.default,
        mode: Mode = SearchMode.HYBRID,
        source_ids: Ids = None,
        tags_any: Tags = None,
        year_min: Year = None,
        year_max: Year = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        filters = Filters(tuple(source_ids or ()), tuple(tags_any or ()), year_min, year_max)

        async def work(actor: Actor, _: Any | None) -> SearchOutput:
            return await run_in_threadpool(lambda: tools.search(actor, query, limit, mode, filters))

        return tool_result(await dispatch("search", ctx, caller, work, tracer))

    @server.tool(
        name="ask",
        title="Ask the library",
        description=(
            "Answer a question from the books you may read. The answer's segments cite"
            " passages; each citation has its ref, attribution (title, chapter, section,"
            " printed pages), the application's support label and score, and the link"
            " citadel's resolver gives you now (state and href): use no other link. When"
            " there is no validated answer, `degraded` says why and `results` holds the"
            " passages found. Each ask is a turn of a conversation: pass the"
            ' `conversation.conversation_id` it returns to ask a follow-up ("and its'
            ' default?"), whose search is built from the conversation.'
        ),
        annotations=_READ_ONLY,
    )
    async def ask(
        question: Question,
        ctx: Context[Any, Any],
        limit: AskLimit = ANSWER_RESULTS.default,
        minimum_evidence_score: Floor = EVIDENCE_FLOOR,
        source_ids: Ids = None,
        tags_any: Tags = None,
        year_min: Year = None,
        year_max: Year = None,
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, AskOutput]:
        filters = Filters(tuple(source_ids or ()), tuple(tags_any or ()), year_min, year_max)

        async def work(actor: Actor, request: Any | None) -> AskOutput:
            return await tools.ask(
                actor,
                question,
                limit,
                minimum_evidence_score,
                filters,
                conversation_id=conversation_id,
                request_id=request_id_of(request),
            )

        return tool_result(await dispatch("ask", ctx, caller, work, tracer))

    @server.tool(
        name="get_passage",
        title="Read a passage",
        description=(
            "Read a passage you may read now: a citation of an earlier answer (answer_id"
            " and ref; its link is resolved for you again) or a search result"
            " (evidence_id). Refused for a source you may not see."
        ),
        annotations=_READ_ONLY,
    )
    async def get_passage(
        ctx: Context[Any, Any],
        answer_id: AnswerId = None,
        ref: Ref = None,
        evidence_id: EvidenceId = None,
    ) -> Annotated[CallToolResult, PassageOut]:
        async def work(actor: Actor, _: Any | None) -> PassageOut:
            return await run_in_threadpool(
                lambda: tools.passage(actor, answer_id=answer_id, ref=ref, evidence_id=evidence_id)
            )

        return tool_result(await dispatch("get_passage", ctx, caller, work, tracer))

    strict_arguments(server)
    return server
