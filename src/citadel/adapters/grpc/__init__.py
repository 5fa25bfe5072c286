"""gRPC adapters: TLS policy and credentials, the development CA, and the split-mode clients.

Importing this package does not load gRPC: ``tls.restrict_handshakes_to_tls13``
must run before gRPC's core starts (see there).
"""
