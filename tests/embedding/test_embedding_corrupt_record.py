"""With the embedding stage on, a row Spark's JSON reader could not parse (a text in its
``_corrupt_record`` column) fails with the rows' reader's reason for it, and its text is not embedded.
The stage called it bare before (``no text in column 'text' and no vector``: Spark reads the field at
fault as null), which points at the text column when the line is what is broken."""

from __future__ import annotations

import pyarrow as pa

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect

NOT_UTF8 = "column '_corrupt_record': text is not valid UTF-8; Spark could not parse the line"
NOT_PARSED = "column '_corrupt_record': Spark could not parse the line: "


def corrupt_lines(lines: list[bytes | None]) -> pa.Array:
    """A string column holding ``lines`` as they are, bytes that are not UTF-8 included (as Spark's Arrow
    conversion hands them over: unchecked)."""
    offsets, data, valid = [0], b"", []
    for line in lines:
        data += line or b""
        offsets.append(len(data))
        valid.append(line is not None)
    bitmap = pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(
        pa.string(),
        len(lines),
        [bitmap, pa.py_buffer(pa.array(offsets, pa.int32()).buffers()[1]), pa.py_buffer(data)],
        null_count=valid.count(False),
    )


def test_corrupt_lines_fail_with_the_readers_reason_unembedded(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    batch = pa.record_batch(
        {
            "id": ["fine", "latin1", "half"],
            # Spark parses what it can of a corrupt line: a Latin-1 text is null, another field's fault not
            "text": ["a fine text", None, "a text parsed from a broken line"],
            "_corrupt_record": corrupt_lines(
                [None, b'{"id": "latin1", "text": "caf\xe9"}', b'{"id": "half", "text": "a text", "n": 1x}']
            ),
        }
    )
    with connect(pinecone.uri, on_error="report", **embedding_options(embeddings_server)) as client:
        report = client.upsert(batch)
    failed = {i: (f.error_type, f.error) for f in report.failures for i in f.ids}
    assert failed["latin1"] == ("Invalid", NOT_UTF8)
    assert failed["half"][1].startswith(NOT_PARSED), failed["half"]
    assert set(failed) == {"latin1", "half"}
    assert report.embedded == 1  # the broken lines' texts are not sent
    assert embeddings_server.stats.inputs == 1  # one text reached the server
    assert pinecone.arrived().ids() == {"fine"}
