"""Transports move encoded requests: gRPC (grpcio), HTTP (our own HTTP/1.1; httpx through a proxy), and a
scripted mock for tests."""
