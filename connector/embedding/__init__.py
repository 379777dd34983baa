"""vectordb.connector.embedding: texts to float32 vectors through any OpenAI-compatible endpoint.

    from vectordb.connector.embedding import embed
    vectors = embed(texts, url="https://api.openai.com", model="text-embedding-3-small",
                    api_key_env="OPENAI_API_KEY")          # numpy (n, d) float32, input order

``embed`` raises ``EmbeddingFailed`` naming every input that could not be embedded; the client
below it, ``EmbeddingClient``, returns per-input failures instead (``embed``) and streams chunks in
bounded memory (``stream``), for pipelines that upsert what was embedded while later texts are
embedded. Not imported by ``import vectordb.connector``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..redaction import caught, returned
from .client import EmbeddingClient, EmbedResult
from .options import EmbedOptions, parse_embed_options
from .result import EmbeddedChunk, EmbeddingFailed, EmbedStats, InputFailure
from .wire import MalformedReply

__all__ = [
    "EmbedOptions",
    "EmbedResult",
    "EmbedStats",
    "EmbeddedChunk",
    "EmbeddingClient",
    "EmbeddingFailed",
    "InputFailure",
    "MalformedReply",
    "embed",
    "parse_embed_options",
]


def embed(
    texts: Sequence[str],
    *,
    url: str,
    model: str,
    api_key: str | None = None,
    api_key_env: str | None = None,
    batch_size: int | None = None,
    max_batch_chars: int | None = None,
    max_concurrency: int | None = None,
    dimensions: int | None = None,
    timeout_s: float | None = None,
    max_retries: int | None = None,
    encoding_format: str | None = None,
    isolation_budget: float | None = None,
) -> np.ndarray:
    """Embed ``texts`` with the model behind ``url``; row ``i`` is the vector of ``texts[i]``.

    Args:
        url: the server's base URL (``/v1/embeddings`` is appended; see ``EmbedOptions``).
        api_key / api_key_env: the key, or the name of an environment variable holding it; sent as
            ``Authorization: Bearer``, never shown in errors or reprs.
        batch_size, max_batch_chars: per request, inputs and characters (defaults 64 and 200,000).
        max_concurrency: requests in flight at most (default 32; AIMD below it).
        dimensions: ask the model for shorter vectors (models that support it).
        timeout_s, max_retries: per request (defaults 60 s and 5).
        encoding_format: ``"base64"`` (default; floats if the server refuses it) or ``"float"``.
        isolation_budget: requests per input that finding the inputs of a refused request may spend
            (default 1.0, as a write's): past it, the inputs left fail as ``NotIsolated`` (retryable).

    Returns:
        A C-contiguous ``(len(texts), d)`` float32 matrix.

    Raises:
        EmbeddingFailed: some inputs could not be embedded; ``.failures`` has their indices and reasons.
        ConfigError: bad options. AuthError, NotFound, SystemicRejection, ConnectError: nothing could work.
    """
    outcome = caught(
        parse_embed_options,
        {
            "url": url,
            "model": model,
            "api_key": api_key,
            "api_key_env": api_key_env,
            "batch_size": batch_size,
            "max_batch_chars": max_batch_chars,
            "max_concurrency": max_concurrency,
            "dimensions": dimensions,
            "timeout_s": timeout_s,
            "max_retries": max_retries,
            "encoding_format": encoding_format,
            "isolation_budget": isolation_budget,
        },
    )
    # an error raised through this frame must not show the key (``redaction``: tools print a traceback's
    # locals), a bad option's neither: it is raised once the key is gone; the options hold it, masked
    del api_key
    try:
        options = returned(outcome)
    finally:
        del outcome  # an error held by a frame it passed is a cycle (``redaction.returned``)
    with EmbeddingClient(options) as client:
        result = client.embed(texts)
    if result.failures:
        raise EmbeddingFailed(result.failures, len(texts), result.vectors)
    return np.ascontiguousarray(result.vectors)
