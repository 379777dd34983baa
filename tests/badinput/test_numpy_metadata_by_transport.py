"""numpy values in dict rows' metadata (a DataFrame's ``to_dict("records")``, Beam elements) are stored as
the Python values they hold, the same over Pinecone's REST and gRPC: gRPC stored ``np.bool_(True)`` as the
text "True", REST a numpy array of strings as the text "['x' 'y']", and a float32 differed by transport."""

from __future__ import annotations

import numpy as np
import pytest

from tests.servers.fixtures import start_server
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

GIVEN = {
    "flag": np.bool_(True),
    "count": np.int64(3),
    "label": np.str_("x"),
    "score": np.float32(0.1),
    "tags": np.array(["x", "y"]),
}
STORED = {"flag": True, "count": 3, "label": "x", "score": float(np.float32(0.1)), "tags": ["x", "y"]}


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_numpy_metadata_is_stored_as_its_python_value_over_each_transport(kind: str) -> None:
    with start_server(kind) as server:  # type: ignore[arg-type]
        try:
            with connect(server.uri, api_key="k", on_error="report") as client:
                report = client.upsert([{"id": "a", "values": [1.0, 2.0], "metadata": GIVEN}])
        finally:
            forget_shared()
        stored = server.arrived().namespaces[""]["a"].metadata
    assert report.ok and report.written == 1, report
    assert (
        stored == STORED and type(stored["flag"]) is bool
    )  # numbers: float64 on one transport, int on the other
