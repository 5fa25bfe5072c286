"""``--source``, ``--tag``, ``--year-from`` and ``--year-to`` for ``search`` and ``ask``.

They become the API's domain ``SearchFilters`` (applied inside retrieval): several
``--source`` or ``--tag`` values match any of them; the years bound the source's
year, inclusive. A range that runs backwards is bad usage (exit 2), said plainly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from citadel.domain.errors import InvalidValue
from citadel.domain.integers import YEAR_MAX, YEAR_MIN, check_int, parse_int
from citadel.domain.search import SearchFilters
from citadel.entrypoints.cli.support import err

SourceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        help="Only this source id (repeat for several).",
        show_default=False,
    ),
]
TagOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tag", help="Only sources with this tag (repeat: any of them).", show_default=False
    ),
]


def whole(low: int, high: int, what: str) -> Callable[[str | int], int]:
    """The parser of an integer option: the domain's one integer rule (usage error if bad)."""

    def parse(text: str | int) -> int:
        try:
            # click hands a default (or a value it already converted) over as an int.
            if isinstance(text, int):
                return check_int(text, low=low, high=high, what=what)
            return parse_int(text, low=low, high=high, what=what)
        except InvalidValue as exc:
            raise typer.BadParameter(str(exc)) from None

    return parse


year = whole(YEAR_MIN, YEAR_MAX, "a year")


YearFromOption = Annotated[
    int | None,
    typer.Option("--year-from", parser=year, help="Only sources from this year on (-9999–9999)."),
]
YearToOption = Annotated[
    int | None,
    typer.Option("--year-to", parser=year, help="Only sources up to this year (-9999–9999)."),
]


def search_filters(
    sources: list[str] | None,
    tags: list[str] | None,
    year_from: int | None,
    year_to: int | None,
) -> SearchFilters:
    """The filters the options ask for; exits 2 when the year range runs backwards."""
    if year_from is not None and year_to is not None and year_from > year_to:
        err.print(
            f"[red]error:[/red] --year-from {year_from} is after --year-to {year_to}:"
            " the range runs backwards"
        )
        raise typer.Exit(2)
    return SearchFilters(
        source_ids=frozenset(s.strip() for s in sources or () if s.strip()),
        tags_any=frozenset(t.strip() for t in tags or () if t.strip()),
        year_min=year_from,
        year_max=year_to,
    )
