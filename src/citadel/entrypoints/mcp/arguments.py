"""Tool arguments under the input rule every surface shares (``entrypoints.inputs``).

The SDK builds each tool's argument model from its signature and validates it
leniently: an unknown argument is dropped, ``true`` or ``"5"`` pass for an
integer, and a string holding JSON is decoded first. Here each tool's model
becomes strict (``strict_model``) and that decoding is off, so a tool refuses
what ``POST /v1/search`` refuses, as a tool error naming the argument.

A refused call is told in citadel's words (``present.refusals``, as the HTTP
API's 422 bodies are): the SDK would send pydantic's own text, with its type
codes, the input and a documentation URL per field.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from citadel.entrypoints.inputs import strict_model
from citadel.entrypoints.present.refusals import validation_message


class CitadelServer(MCPServer[Any]):
    """The SDK's server, with refused arguments told in citadel's words."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            # The cause stays: the SDK logs the refused fields' names (never their values).
            words = validation_message(cause.errors(), whole="the arguments")
            raise ToolError(f"{name} refused its arguments: {words}") from cause


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
