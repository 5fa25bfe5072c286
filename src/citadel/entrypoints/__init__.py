"""Entrypoints, one wing each: ``cli``, ``http`` and ``grpc``; parse, call one use case,
serialize. What more than one wing shows is in ``present`` (no CLI, HTTP or gRPC library)."""
