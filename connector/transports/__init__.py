"""Transports move encoded requests: gRPC (grpcio), HTTP (httpx), and a scripted mock for tests."""
