"""``VectorDBWriteConfig``: ``WriteToVectorDB`` as an ``apache_beam.ml.rag`` vector database config.

::

    from apache_beam.ml.rag.ingestion.base import VectorDatabaseWriteTransform
    chunks | VectorDatabaseWriteTransform(VectorDBWriteConfig("milvus://milvus:19530/docs", id_from="..."))

The options are validated when the config is made, as for ``WriteToVectorDB``. An ``ml.rag``
item's text is stored in the metadata under ``content_key`` (default ``"content"``: an item whose own
metadata has that key and which has text fails, naming the key; pass another ``content_key``); with the
embedding options (``embed_url``, ``embed_model``, ``embed_api_key``…) items without an embedding
are embedded from that text on their way in, so the pipeline needs no embedding step of its own.
"""

from __future__ import annotations

from typing import Any

from apache_beam.ml.rag.ingestion.base import VectorDatabaseWriteConfig

from .sink import WriteToVectorDB

__all__ = ["VectorDBWriteConfig"]


class VectorDBWriteConfig(VectorDatabaseWriteConfig):
    """Writes ``Chunk``/``EmbeddableItem``s with the connector; takes ``WriteToVectorDB``'s arguments."""

    def __init__(self, uri: str, **kwargs: Any) -> None:
        self.uri, self.kwargs = uri, kwargs
        self.transform = WriteToVectorDB(uri, **kwargs)  # validates now, on the driver

    def __repr__(self) -> str:
        return f"VectorDBWriteConfig({self.transform.target})"

    def create_write_transform(self) -> WriteToVectorDB:
        return WriteToVectorDB(self.uri, **self.kwargs)
