"""What every entrypoint shows, in one place that imports no CLI, HTTP or gRPC library:
the JSON shapes (``shapes``), a citation's labels for readers (``labels``), and library
text as Markdown no renderer makes anything of (``neutral``)."""
