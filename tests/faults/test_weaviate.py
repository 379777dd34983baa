"""Faults of Weaviate's own: its rows go over gRPC, to another port than the schema's REST.

The matrix (test_matrix.py) hurts the whole server. Here the schema's port answers and only the rows'
port is silent or refused, which no check before the write can see (``check_target`` speaks REST).
Every row is read back with weaviate-client (tests/faults/conftest.py: ``read_weaviate``) and the
account checked as in the matrix.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.faults.conftest import Target
from tests.faults.test_matrix import assert_failed_at_start, write
from tests.faults.tools import (
    assert_account,
    closed_port,
    expected_rows,
    rows,
    silent_listener,
)

pytestmark = pytest.mark.timeout(120)


def test_the_rows_port_never_answers(target_weaviate: Target, fault_log: Any) -> None:
    """The schema's REST port answers (the collection is made), the rows' gRPC port accepts and stays
    silent: the first batch spends its retries there and the write stops, naming that port, instead
    of every later batch waiting out ``timeout_s`` in turn; nothing is claimed, nothing stored."""
    target = target_weaviate
    timeout_s, max_retries = 0.5, 2
    with silent_listener() as port:
        outcome = write(target, grpc_port=port, timeout_s=timeout_s, max_retries=max_retries)
    text = assert_failed_at_start(outcome, f"127.0.0.1:{port}")
    assert_account(expected_rows(rows(3000, seed=7)), outcome, target.read_back())
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][-120:])
    bound = (max_retries + 1) * (timeout_s + 1.0) + 1.6 + 2.0
    assert outcome.elapsed_s < bound, f"{outcome.elapsed_s:.1f} s, bound {bound:.1f} s: {text}"


def test_the_rows_port_refuses(target_weaviate: Target, fault_log: Any) -> None:
    """As above, with nothing listening on the gRPC port: a clear error naming it, soon."""
    target = target_weaviate
    port = closed_port()
    outcome = write(target, grpc_port=port, timeout_s=0.5, max_retries=2)
    text = assert_failed_at_start(outcome, f"127.0.0.1:{port}")
    assert_account(expected_rows(rows(3000, seed=7)), outcome, target.read_back())
    fault_log(elapsed_s=outcome.elapsed_s, error=text.splitlines()[0][-120:])
    assert outcome.elapsed_s < 5.0, text
