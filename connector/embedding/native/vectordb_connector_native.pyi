def decode_base64_reply(body: bytes, count: int) -> bytes | None:
    """The float32 bytes of an OpenAI embeddings reply to ``count`` inputs with base64 vectors, row ``i``
    for input ``i``; ``None`` for any reply that is not exactly that (the caller's decoder says why)."""
