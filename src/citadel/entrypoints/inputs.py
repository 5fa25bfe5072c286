"""The one rule for fields every pydantic-validated input surface takes.

HTTP request bodies (``http.schemas``) and MCP tool arguments (``mcp.arguments``)
are validated by models built on ``StrictInput``: exactly the declared fields
(an unknown one is refused, naming it) and strict types (JSON ``true`` is no
1, ``"5"`` and ``5.0`` are no integer; an integer may stand for a float).
Their JSON text is read by ``domain.json_input`` (unique keys, bounded integer
literals) and their integers are ranged by the field. An enum field takes its
value's text: declare it ``Field(strict=False)`` (strict mode would take only
the Python enum member, which JSON cannot carry). The gRPC edge reads protobuf, whose
types are its own, and checks unknown fields and ranges in ``wire.convert``;
shadow records are checked by ``app.shadow_input``. Every surface refuses the
same table of bad inputs (``tests/bad_inputs.py``).
"""

from __future__ import annotations

from typing import TypeVar, cast

from pydantic import BaseModel, ConfigDict

STRICT_FIELDS = ConfigDict(extra="forbid", strict=True)
"""Unknown fields refused, types strict: the configuration of every input model."""


class StrictInput(BaseModel):
    """A request's fields under ``STRICT_FIELDS``, frozen once validated."""

    model_config = ConfigDict(**STRICT_FIELDS, frozen=True)


M = TypeVar("M", bound=BaseModel)


def strict_model(model: type[M]) -> type[M]:
    """``model`` with ``STRICT_FIELDS`` added to its configuration (a subclass with
    the same fields): for models a library builds, such as MCP tool arguments."""
    config = ConfigDict(**{**model.model_config, **STRICT_FIELDS})
    return cast(
        "type[M]", type(model.__name__, (model,), {"model_config": config, "__module__": __name__})
    )
