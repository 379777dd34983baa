from __future__ import annotations

import pickle

from vectordb.connector import BatchFailure, WriteReport


def failure(ids: tuple[str, ...], error: str = "bad dim") -> BatchFailure:
    return BatchFailure(ids=ids, error=error, error_type="Rejected", attempts=1)


def test_merge_adds_counts_and_keeps_failures() -> None:
    a = WriteReport(
        written=5,
        failed=1,
        requests=2,
        retries=1,
        throttled=1,
        bytes_sent=10,
        elapsed_s=1.0,
        failures=[failure(("x",))],
    )
    b = WriteReport(
        written=3, failed=2, requests=1, bytes_sent=5, elapsed_s=2.0, failures=[failure(("y", "z"))]
    )
    m = a.merge(b)
    assert (m.written, m.failed, m.requests, m.retries, m.throttled, m.bytes_sent, m.elapsed_s) == (
        8,
        3,
        3,
        1,
        1,
        15,
        2.0,
    )
    assert m.failed_ids == ["x", "y", "z"]
    assert not m.ok
    assert WriteReport().merge(a) == a.merge(WriteReport()) == a


def test_repr_is_one_readable_line_with_reasons() -> None:
    r = WriteReport(
        written=9744, failed=256, failures=[failure(tuple(str(i) for i in range(256)), "dim 768 != 1536")]
    )
    text = repr(r)
    assert "\n" not in text
    assert text.startswith("WriteReport(PARTIAL: 9744/10000 written, 256 failed")
    assert "256× Rejected: dim 768 != 1536" in text
    assert repr(WriteReport(written=3)).startswith("WriteReport(OK: 3/3 written")
    assert repr(WriteReport(failed=3, failures=[failure(("a", "b", "c"))])).startswith("WriteReport(FAILED")


def test_report_pickles() -> None:
    r = WriteReport(written=1, failures=[failure(("a",))])
    assert pickle.loads(pickle.dumps(r)) == r
