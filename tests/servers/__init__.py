"""Pinecone-protocol test servers (REST and gRPC) with a scripted fault injection, in a thread or a process.

``script`` holds the fault script and the record of what arrived; ``pinecone_rest`` and
``pinecone_grpc`` are the servers; ``fixtures`` has the pytest fixtures and ``ServerHandle``.
"""
