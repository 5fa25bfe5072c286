"""Tool arguments under the input rule every surface shares (``entrypoints.inputs``).

The SDK builds each tool's argument model from its signature and validates it
leniently: an unknown argument is dropped, ``true`` or ``"5"`` pass for an
integer, and a string holding JSON is decoded first. Here each tool's model
becomes strict (``strict_model``) and that decoding is off, so a tool refuses
what ``POST /v1/search`` refuses, as a tool error naming the argument.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

from citadel.entrypoints.inputs import strict_model


class StrictArguments(FuncMetadata):
    """A tool's metadata whose arguments are validated as sent: no JSON inside strings."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


def strict_arguments(server: MCPServer[Any]) -> None:
    """Make every tool registered on ``server`` take its arguments strictly."""
    # The SDK offers no hook for the argument model; its tool registry is the one place.
    for tool in server._tool_manager.list_tools():
        meta = tool.fn_metadata
        tool.fn_metadata = StrictArguments(
            arg_model=strict_model(meta.arg_model),
            output_schema=meta.output_schema,
            output_model=meta.output_model,
            wrap_output=meta.wrap_output,
        )
