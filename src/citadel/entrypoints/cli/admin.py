"""The ``citadel sources``, ``users`` and ``audit`` command groups: the registry,
the API users and the answers' audit log, for whoever administers a library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from citadel.app.errors import AppError, InvalidRequest
from citadel.app.users import LINK_TTL_S
from citadel.bootstrap import Services
from citadel.domain.users import Role, User
from citadel.entrypoints.cli.support import (
    AsOption,
    HomeOption,
    JsonFlag,
    emit,
    err,
    library_call,
    open_services,
    parse_groups,
    print_error,
)
from citadel.entrypoints.cli.text import (
    audit_text,
    source_details_text,
    source_line,
    terminal_safe,
    user_line,
)
from citadel.entrypoints.present.neutral import neutral_inline
from citadel.entrypoints.present.shapes import (
    chunk_json,
    source_details_json,
    source_json,
    user_json,
)

sources_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True, help="Inspect and manage the source registry."
)


@sources_app.command("list")
def sources_list(
    json_out: JsonFlag = False, home: HomeOption = None, as_user: AsOption = None
) -> None:
    """Live sources (that the actor may read), by title."""
    found = library_call(home, lambda s, actor: s.library.list(actor), as_user)
    if json_out:
        for source in found:
            emit(source_json(source))
        return
    if not found:
        print("The library is empty.")
    for source in found:
        print(terminal_safe(source_line(source)))


@sources_app.command("show")
def sources_show(
    source_id: Annotated[str, typer.Argument(help="The source to show.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """A source's metadata and versions."""
    details = library_call(home, lambda s, actor: s.library.show(source_id, actor), as_user)
    if json_out:
        emit(source_details_json(details))
    else:
        print(terminal_safe(source_details_text(details)))


@sources_app.command("chunks")
def sources_chunks(
    source_id: Annotated[str, typer.Argument(help="The source whose chunks to print.")],
    version: Annotated[int | None, typer.Option(min=1, help="Version (default: current).")] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """A version's chunks in reading order (``--json``: one object per line)."""
    chunks = library_call(
        home, lambda s, actor: s.library.chunks(source_id, actor, version), as_user
    )
    for chunk in chunks:
        if json_out:
            emit(chunk_json(chunk))
        else:
            where = " > ".join(chunk.section_path) or "(no section)"
            pages = chunk.page_label_start or chunk.location or ""
            # The chunk's text is the book's: as library text is shown (folded to a line).
            lead = neutral_inline(chunk.text[:100])
            print(terminal_safe(f"#{chunk.ordinal} {neutral_inline(where)} [{pages}] {lead}"))


@sources_app.command("move")
def sources_move(
    source_id: Annotated[str, typer.Argument(help="The source that moved.")],
    new_path: Annotated[Path, typer.Argument(help="Its new location.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Record a new location; the source id, versions and citations stay the same."""
    moved = library_call(
        home, lambda s, actor: s.library.move(source_id, str(new_path.resolve()), actor), as_user
    )
    if json_out:
        emit(source_json(moved))
    else:
        err.print(f"moved {source_id} to {terminal_safe(moved.origin)}")


@sources_app.command("delete")
def sources_delete(
    source_id: Annotated[str, typer.Argument(help="The source to delete.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Delete a source's text; a tombstone stays so old citations say "deleted"."""
    library_call(home, lambda s, actor: s.library.delete(source_id, actor), as_user)
    if json_out:
        emit({"source_id": source_id, "status": "deleted"})
    else:
        err.print(f"deleted {source_id} (tombstone kept)")


@sources_app.command("acl")
def sources_acl(
    source_id: Annotated[str, typer.Argument(help="The source whose readers to change.")],
    groups: Annotated[
        str,
        typer.Option(
            "--set",
            metavar="GROUP,...",
            help='The groups that may read it, replacing the old ones; "" opens it to the tenant.',
        ),
    ],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Replace the groups that may read a source (librarians and admins only)."""
    changed = library_call(
        home, lambda s, actor: s.library.set_acl(source_id, parse_groups(groups), actor), as_user
    )
    if json_out:
        emit(source_json(changed))
    else:
        readers = ",".join(sorted(changed.acl_groups)) or "everyone in the tenant"
        err.print(escape(terminal_safe(f"{source_id} is readable by {readers}")))


users_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True, help="Register and disable users (API tokens)."
)


def users_call(home: Path | None, call: Any) -> Any:
    """Run a user-management call; a bad name is a usage error (2), any other refusal 1."""
    with open_services(home) as services:
        try:
            return call(services)
        except AppError as exc:
            print_error(exc)
            raise typer.Exit(2 if isinstance(exc, InvalidRequest) else 1) from exc


@users_app.command("add")
def users_add(
    name: Annotated[str, typer.Argument(help="The user's name (unique across tenants).")],
    role: Annotated[Role, typer.Option(help="What the user may do.")] = Role.READER,
    tenant: Annotated[
        str | None, typer.Option(help="The user's tenant (default: $CITADEL_TENANT).")
    ] = None,
    groups: Annotated[
        str | None,
        typer.Option(metavar="GROUP,...", help="Comma-separated groups the user belongs to."),
    ] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Register a user and print its API token — the only time it is shown — and a
    one-time link that signs it in to the web UI (no token to paste)."""

    def register(s: Services) -> tuple[User, str, str]:
        user, token = s.users.add(name, role, tenant or s.settings.tenant, parse_groups(groups))
        return user, token, signin_link(s, s.users.issue_link(user.name))

    user, token, link = users_call(home, register)
    if json_out:
        emit({"name": user.name, "token": token, "signin_link": link})
    else:
        print(token)
    err.print(
        escape(
            f"added {user.name} ({user.role.value} of {user.tenant});"
            " its API token is shown only this once: store it now"
        )
    )
    _say_link(user.name, link, json_out)


@users_app.command("link")
def users_link(
    name: Annotated[str, typer.Argument(help="The user to sign in.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Print a new one-time link that signs a user in to the web UI."""
    link = users_call(home, lambda s: signin_link(s, s.users.issue_link(name)))
    if json_out:
        emit({"name": name, "signin_link": link})
    else:
        print(link)
    _say_link(name, link, json_out, printed=True)


def signin_link(services: Services, secret: str) -> str:
    """The link under the public URL when one is set, else the server's route."""
    return f"{services.settings.public_url}/signin/link/{secret}"


def _say_link(name: str, link: str, json_out: bool, *, printed: bool = False) -> None:
    minutes = LINK_TTL_S // 60
    where = "" if printed or json_out else f": {link}"
    err.print(
        escape(
            f"one-time sign-in link for {name}, good for {minutes} minutes{where}"
            + (
                ""
                if link.startswith("http")
                else " (under the server's URL; set CITADEL_PUBLIC_URL to print it whole)"
            )
        ),
        soft_wrap=True,  # a link is copied whole: never broken across lines
        highlight=False,
    )


@users_app.command("disable")
def users_disable(
    name: Annotated[str, typer.Argument(help="The user to disable.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Disable a user: its token and --as stop working at once."""
    user = users_call(home, lambda s: s.users.disable(name))
    if json_out:
        emit(user_json(user))
    else:
        err.print(escape(f"disabled {user.name}"))


@users_app.command("enable")
def users_enable(
    name: Annotated[str, typer.Argument(help="The user to enable again.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Enable a disabled user again; its token (unless replaced meanwhile) acts again."""
    user = users_call(home, lambda s: s.users.enable(name))
    if json_out:
        emit(user_json(user))
    else:
        err.print(escape(f"enabled {user.name}"))


@users_app.command("rotate")
def users_rotate(
    name: Annotated[str, typer.Argument(help="The user whose API token to replace.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Replace a user's API token and print the new one, shown only this once.

    The old token and the browser sessions signed in with it stop working at once.
    """
    user, token = users_call(home, lambda s: s.users.rotate(name))
    if json_out:
        emit({"name": user.name, "token": token})
    else:
        print(token)
    state = "" if user.active else f" ({user.name} is disabled: it acts once enabled)"
    err.print(
        escape(
            f"replaced the API token of {user.name}; the old one and its browser sessions"
            f" no longer act{state}. The new token is shown only this once: store it now"
        )
    )


@users_app.command("list")
def users_list(
    tenant: Annotated[
        str | None, typer.Option(help="Only this tenant's users (default: all).")
    ] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Users by name (``--json``: one object per line); tokens are never shown."""
    found = users_call(home, lambda s: s.users.list(tenant))
    if json_out:
        for user in found:
            emit(user_json(user))
        return
    if not found:
        print("No users.")
    for user in found:
        print(user_line(user))


audit_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True, help="Read and check the answers' audit log."
)


@audit_app.command("show")
def audit_show(
    answer_id: Annotated[str, typer.Argument(help="The answer_id of `ask --json`.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Print one answer's record: actor, manifest, model and prompt, verdict, citations."""
    record = library_call(home, lambda s, actor: s.audit.show(answer_id, actor), as_user)
    if json_out:
        emit(json.loads(record.to_json()))
    else:
        print(terminal_safe(audit_text(record)))


@audit_app.command("verify")
def audit_verify(json_out: JsonFlag = False, home: HomeOption = None) -> None:
    """Check every record's hash and link; exit 1 if anything was edited or removed."""
    report = library_call(home, lambda s, _: s.audit.verify())
    if json_out:
        emit({"records": report.records, "intact": report.intact, "problems": report.problems})
    elif report.intact:
        print(f"audit log intact: {report.records} records")
    else:
        print(f"audit log NOT intact ({report.records} records):")
        for problem in report.problems:
            print(f"  - {problem}")
    if not report.intact:
        raise typer.Exit(1)


@audit_app.command("replay")
def audit_replay(
    answer_id: Annotated[str, typer.Argument(help="The answer_id of `ask --json`.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Re-validate the recorded output against the recorded manifest; exit 1 if it differs."""
    report = library_call(home, lambda s, actor: s.audit.replay(answer_id, actor), as_user)
    if json_out:
        emit(
            {
                "answer_id": report.answer_id,
                "stored": report.stored,
                "replayed": report.replayed,
                "holds": report.holds,
                "note": report.note,
            }
        )
    else:
        verdict = "holds" if report.holds else "DOES NOT HOLD"
        print(f"verdict {verdict}: recorded {report.stored}; replayed {report.replayed}")
        if report.note:
            print(f"  ({report.note})")
    if not report.holds:
        raise typer.Exit(1)
