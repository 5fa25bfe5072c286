"""The MCP entrypoint: ``search``, ``ask`` and ``get_passage`` for agent clients.

Over stdio (``citadel mcp --as USER``, ``stdio``) and streamable HTTP under
``citadel serve`` at ``/mcp`` (``streamable``). The tools call the use cases the
HTTP API calls (``tools``) and show their results in the shapes every entrypoint
prints (``presenting``, ``models``); ``server.dispatch`` is where each call runs.
"""
