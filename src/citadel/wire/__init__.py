"""The gRPC wire contract (``proto/citadel/v1``), shared by servers and clients.

``gen/`` holds the committed protoc output (``make proto``); ``convert`` maps
messages to domain values and back; ``identity`` says who may call what: the
service names, the certificate SAN allowlists and the actor carried in
metadata. The servers (entrypoints) and the clients (adapters) both speak it,
so it sits below the adapters and imports only ``app`` and ``domain``.
"""
