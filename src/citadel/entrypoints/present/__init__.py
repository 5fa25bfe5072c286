"""What every entrypoint shows, in one place that imports no CLI, HTTP or gRPC library:
the JSON shapes (``shapes``) and a citation's labels for readers (``labels``)."""
