"""The gRPC edge (``citadel serve-grpc``): the Retrieval and Answer services and their servers."""
