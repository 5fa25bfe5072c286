"""``citadel serve``, ``citadel serve-grpc`` and ``citadel certs dev``: the HTTP edge,
the gRPC services and their certificates.

The HTTP app and uvicorn are loaded only inside ``serve``. gRPC is loaded only
inside ``serve-grpc``, after ``bootstrap.grpc_wiring.prepare_grpc()`` has set the TLS policy
its core reads once at start (no TLS 1.2 handshakes).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from citadel.app.errors import AppError
from citadel.bootstrap import build
from citadel.bootstrap.grpc_wiring import (
    build_answer_client,
    build_retrieval_client,
    grpc_server_credentials,
    mint_dev_certs,
    prepare_grpc,
)
from citadel.config import ConfigError, Settings
from citadel.domain.integers import parse_int
from citadel.domain.users import Role
from citadel.entrypoints.cli.support import HomeOption, err, open_services
from citadel.entrypoints.cli.text import terminal_safe
from citadel.entrypoints.present.json_lines import json_line
from citadel.wire.identity import ANSWER, RETRIEVAL

if TYPE_CHECKING:
    from fastapi import FastAPI

    from citadel.app.answer import Answering
    from citadel.bootstrap import Services
    from citadel.entrypoints.grpc.server import RunningServer


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8080,
    home: HomeOption = None,
    answer_grpc: Annotated[
        str | None,
        typer.Option(
            "--answer-grpc",
            metavar="HOST:PORT",
            help="Split mode: answers come from this Answer service over mTLS (needs --certs).",
        ),
    ] = None,
    certs: Annotated[
        Path | None,
        typer.Option(help="Certificates of `citadel certs dev` (ca.crt, edge-api.crt/.key)."),
    ] = None,
) -> None:
    """Serve the HTTP API (/v1, OpenAPI at /openapi.json), the web UI and the MCP server
    (/mcp); JSON logs on stderr."""
    import uvicorn

    from citadel.entrypoints.http.app import server_options
    from citadel.entrypoints.http.observability import configure_logging

    if answer_grpc and certs is None:
        err.print("[red]error:[/red] --answer-grpc needs --certs DIR")
        raise typer.Exit(2)
    with open_services(home, serving=True) as services:
        answering = None
        if answer_grpc and certs is not None:
            try:
                answering = build_answer_client(services.settings, answer_grpc, certs)
            except (AppError, ConfigError, OSError) as exc:
                err.print(f"[red]configuration error:[/red] {terminal_safe(str(exc))}")
                raise typer.Exit(2) from exc
        app = http_app(services, answering)  # before the JSON logs: the MCP SDK sets logging up
        configure_logging()
        err.print(
            f"citadel: serving http://{host}:{port}/ (sign in with a `citadel users add` token)"
        )
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            server_header=False,
            # Forwarded headers only from CITADEL_HTTP_TRUSTED_PROXIES (default: none).
            **server_options(services.settings.http),
        )


def http_app(services: Services, answering: Answering | None = None) -> FastAPI:
    """What ``citadel serve`` serves: the HTTP API and the web UI (``create_app``), and the
    MCP server at /mcp behind the API's own bearer-token check (``McpHttp``)."""
    from citadel.entrypoints.http import create_app
    from citadel.entrypoints.http.auth import api_actor
    from citadel.entrypoints.http.mounting import mount
    from citadel.entrypoints.mcp.streamable import McpHttp

    return mount(
        create_app(services, answering=answering),
        McpHttp(services, api_actor, answering=answering),
    )


certs_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True, help="Certificates for the gRPC services."
)


@certs_app.command("dev")
def certs_dev(
    directory: Annotated[
        Path, typer.Argument(help="Where to write the CA, certificates and keys.")
    ],
    json_out: Annotated[bool, typer.Option("--json", help="Print the paths as JSON.")] = False,
) -> None:
    """Mint a development CA and the edge-api, answer-service and retrieval-service
    certificates (plus wrong-SAN, other-CA and expired ones for tests); keys are 0600."""
    written = mint_dev_certs(directory)
    if json_out:
        sys.stdout.write(json_line([str(p) for p in written]) + "\n")
    else:
        for path in written:
            err.print(escape(str(path)))
    err.print(f"wrote a development CA and {len(written) // 2 - 1} certificates to {directory}")


def _roles(text: str | None) -> frozenset[Role]:
    if text is None:
        return frozenset(Role)
    try:
        roles = frozenset(Role(part.strip()) for part in text.split(",") if part.strip())
    except ValueError:
        roles = frozenset()
    if not roles:
        err.print("[red]error:[/red] --roles takes one or more of reader, librarian, admin")
        raise typer.Exit(2)
    return roles


def serve_grpc(
    certs: Annotated[
        Path,
        typer.Option(
            "--certs", help="Directory with ca.crt and NAME.crt/NAME.key (see `certs dev`)."
        ),
    ],
    retrieval: Annotated[
        str | None,
        typer.Option(metavar="HOST:PORT", help="Serve citadel.v1.Retrieval here."),
    ] = None,
    answer: Annotated[
        str | None, typer.Option(metavar="HOST:PORT", help="Serve citadel.v1.Answer here.")
    ] = None,
    retrieval_target: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="Split mode: Answer searches on this Retrieval service, as answer-service.",
        ),
    ] = None,
    roles: Annotated[
        str | None,
        typer.Option(metavar="ROLE,...", help="Roles admitted (default: all three)."),
    ] = None,
    generator: Annotated[
        str | None, typer.Option(help="extractive (default) or openai (needs CITADEL_LLM_*).")
    ] = None,
    home: HomeOption = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="Serve /metrics here (Prometheus, plain HTTP: the calls, searches, answers).",
        ),
    ] = None,
) -> None:
    """Serve Retrieval and/or Answer over gRPC: mutual TLS 1.3 only, exact SAN allowlists
    (Answer: edge-api; Retrieval: edge-api, answer-service), and each call's actor
    confirmed by this library's user store (unknown, disabled or over-claiming: refused)."""
    if retrieval is None and answer is None:
        err.print("[red]error:[/red] give --retrieval HOST:PORT, --answer HOST:PORT or both")
        raise typer.Exit(2)
    if retrieval_target is not None and answer is None:
        err.print("[red]error:[/red] --retrieval-target is for the Answer service (--answer)")
        raise typer.Exit(2)
    admitted = _roles(roles)
    try:
        prepare_grpc()
        settings = Settings.from_env(os.environ).with_overrides(home=home, generator=generator)
        retrieval_credentials = (
            grpc_server_credentials(certs, RETRIEVAL.server_name) if retrieval else None
        )
        answer_credentials = grpc_server_credentials(certs, ANSWER.server_name) if answer else None
        remote = (
            build_retrieval_client(settings, retrieval_target, certs) if retrieval_target else None
        )
        services = build(settings, retrieval=remote, serving=True)
    except (ConfigError, AppError) as exc:
        err.print(f"[red]configuration error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    from citadel.entrypoints.grpc.rpc_metrics import RpcMetrics
    from citadel.entrypoints.grpc.server import serve_until_stopped, start_server
    from citadel.entrypoints.grpc.services import AnswerServicer, RetrievalServicer

    stop_metrics = _metrics_listener(services, metrics)
    calls = (RpcMetrics(services.metrics),)
    starting = []
    if retrieval is not None and retrieval_credentials is not None:
        handler = RetrievalServicer(
            services.search, services.users, admitted, tracer=services.tracer
        ).handler()
        address, creds = retrieval, retrieval_credentials
        starting.append(lambda: start_server(RETRIEVAL, handler, address, creds, calls))
    if answer is not None and answer_credentials is not None:
        answer_handler = AnswerServicer(
            services.answer, services.users, admitted, tracer=services.tracer
        ).handler()
        answer_address, answer_creds = answer, answer_credentials
        starting.append(
            lambda: start_server(ANSWER, answer_handler, answer_address, answer_creds, calls)
        )

    def ready(running: Sequence[RunningServer]) -> None:
        for server in running:
            peers = ", ".join(sorted(server.service.allowed_peers))
            err.print(
                f"{server.service.name} on {server.address}"
                f" (mTLS 1.3, as {server.service.server_name}; callers: {peers})"
            )
        if retrieval_target:
            err.print(f"Answer searches on {retrieval_target} as answer-service")

    try:
        asyncio.run(serve_until_stopped(starting, ready))
    except AppError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    finally:
        if stop_metrics is not None:
            stop_metrics()
        services.close()


def _metrics_listener(services: Services, address: str | None) -> Callable[[], None] | None:
    """The registry served on ``address`` (``--metrics``), reported; what stops it."""
    if address is None:
        return None
    host, _, port = address.rpartition(":")
    try:
        if not host:
            raise ValueError(f"{address!r} is not HOST:PORT")
        number = parse_int(port, low=0, high=65535, what=f"the port of {address!r} (HOST:PORT)")
        bound, stop = services.metrics.listen(host.strip("[]"), number)
    except (ValueError, OSError) as exc:
        services.close()
        err.print(f"[red]configuration error:[/red] --metrics: {escape(str(exc))}")
        raise typer.Exit(2) from exc
    err.print(f"metrics on http://{host}:{bound}/metrics")
    return stop
