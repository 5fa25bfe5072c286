"""``citadel mcp``: the MCP server over stdio, for an agent client that starts it.

Stdout carries JSON-RPC only; the SDK's and citadel's messages go to stderr.
"""

from __future__ import annotations

import logging

import typer

from citadel.domain.users import Actor
from citadel.entrypoints.cli.support import (
    AsOption,
    HomeOption,
    actor_for,
    empty_library,
    err,
    holds_books,
    local_actor,
    open_services,
)


def mcp(home: HomeOption = None, as_user: AsOption = None) -> None:
    """Serve the MCP tools (search, ask, get_passage) over stdio, acting as --as USER."""
    from citadel.entrypoints.mcp.stdio import run_stdio

    logging.basicConfig(level=logging.WARNING)  # stderr; stdout is the transport's
    with open_services(home) as services:
        first = actor_for(services, as_user)  # an unknown or disabled user: exit 2 now
        if not holds_books(
            services, first.tenant
        ):  # served all the same: books may be ingested later
            note = empty_library(services, first.tenant)
            err.print(f"note: {note}", soft_wrap=True, highlight=False)

        def lookup() -> Actor:
            # Again on every call: a user disabled, or given other groups, counts at once.
            if as_user is None:
                return local_actor(services.settings)
            return services.users.actor(as_user)

        try:
            run_stdio(services, lookup)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
