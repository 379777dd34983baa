"""Spark Connect: a client session writes through the data source; its errors arrive readable; its keys
stay out of the server's UI and event log.

The shared session runs the Spark Connect plugin (see conftest), so the client talks to the same
JVM over gRPC, as a Databricks serverless or shared-cluster notebook does. The client runs in a
process of its own (``connect_client.py``): a Connect session changes process-wide state.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from jobs.spark_cluster import free_port
from tests.servers.fixtures import ServerHandle
from vectordb.connector.options import _SECRET_FIELDS

from .conftest import connect_missing

CLIENT = Path(__file__).with_name("connect_client.py")
KEY = "pk-CONNECTLEAK-3b2a1c0d9e"


def test_connect_client_writes_and_reads_errors(spark: Any, grpc_server: ServerHandle) -> None:
    missing = connect_missing()
    if missing:
        pytest.skip(missing)
    port = spark.conf.get("spark.connect.grpc.binding.port")
    result = subprocess.run(
        [sys.executable, str(CLIENT), f"sc://127.0.0.1:{port}", grpc_server.uri],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    said = json.loads(result.stdout.strip().splitlines()[-1])
    assert said["frame"].startswith("pyspark.sql.connect")
    assert "option vector_column: no column 'embedding'" in said["error"]
    arrived = grpc_server.arrived()
    assert arrived.ids("connect") == {f"k{i}" for i in range(500)}
    assert arrived.vector("k3", "connect").values_f32 == (np.arange(24, 32, dtype="<f4") / 8).tobytes()
    assert sum(r.vector_count for r in arrived.requests) == 500  # the failed write sent nothing


def test_redaction_regex_blanks_every_credential_in_plan_text() -> None:
    """The pattern register() sets, read as Python reads it (Java reads these constructs alike)."""
    from vectordb.spark import connect_redaction_regex

    pattern = re.compile(connect_redaction_regex())
    for name in sorted(_SECRET_FIELDS):  # the connector's one list of credential options
        text = f'options {{\n    key: "{name.upper()}"\n    value: "s3cr\\"et"\n  }}'
        assert "s3cr" not in pattern.sub("*", text), name
    plan = 'key: "uri" value: "qdrant://me:p@ss/w:rd@db.example:6334/docs?token=t0k&x=1"'
    shown = pattern.sub("*", plan)
    assert "p@ss" not in shown and "w:rd" not in shown and "t0k" not in shown
    assert "db.example:6334/docs" in shown and "x=1" in shown
    assert pattern.sub("*", 'key: "namespace" value: "docs"') == 'key: "namespace" value: "docs"'


class ConnectSession:
    """Stands in for a Spark Connect session (register() knows one by its class's module)."""

    __module__ = "pyspark.sql.connect.session"

    def __init__(self, regex: str | None, *, refuse: bool = False) -> None:
        self.dataSource = SimpleNamespace(register=lambda source: None)
        self.conf = SimpleNamespace(
            get=lambda name, default: regex if regex is not None else default, set=self.set
        )
        self.refuse = refuse
        self.regex = regex

    def set(self, name: str, value: str) -> None:
        if self.refuse:
            raise RuntimeError(f"[CONFIG_NOT_AVAILABLE] Configuration {name} is not available.")
        self.regex = value


def test_register_keeps_the_users_pattern_and_warns_where_the_server_refuses(caplog: Any) -> None:
    from vectordb.spark import connect_redaction_regex, register

    ours = connect_redaction_regex()
    session = ConnectSession("(?i)my-secret")
    register(session)
    assert session.regex == f"(?:(?i)my-secret)|{ours}"
    again = ConnectSession(session.regex)
    register(again)
    assert again.regex == session.regex  # added once
    register(ConnectSession(None, refuse=True))
    assert "spark.sql.redaction.string.regex" in caplog.text and "api_key_env" in caplog.text
    assert f"--conf spark.sql.redaction.string.regex='{ours}'" in caplog.text


@contextmanager
def connect_server(events: Path) -> Iterator[tuple[str, str, str]]:
    """A Spark Connect server (``start-connect-server.sh``'s class) with its UI on and an event log in
    ``events``; yields its ``sc://`` URL, its UI's URL and the REST API base of its one application."""
    import pyspark

    for attempt in range(
        3
    ):  # another process may take a probed port before the JVM binds it, which then exits
        port, ui_port = free_port(), free_port()
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.port": str(ui_port),
            "spark.ui.showConsoleProgress": "false",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": str(events),
            "spark.eventLog.compress": "false",
            "spark.port.maxRetries": "0",  # a UI port taken: exit (and start again here), not bind the next one
        }
        command = [os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")]
        command += [
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            "local[2]",
        ]
        for name, value in conf.items():
            command += ["--conf", f"{name}={value}"]
        server = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        ui = f"http://127.0.0.1:{ui_port}"
        api = f"{ui}/api/v1/applications"
        apps = _started(server, port, api)
        if apps is not None or attempt == 2:
            break
    assert apps is not None, "the Spark Connect server exited"
    try:
        yield f"sc://127.0.0.1:{port}", ui, f"{api}/{apps[0]['id']}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # its shutdown hook closes the event log
        server.wait(timeout=120)


def _started(server: subprocess.Popen[bytes], port: int, api: str) -> Any:
    """The server's applications once its UI lists one and its Connect port accepts, or ``None`` if it
    exited first (a port taken)."""
    deadline = time.monotonic() + 180
    while True:
        try:  # the UI answers "Spark is starting up" before it has an application
            apps = json.loads(fetch(api))
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return apps
        except (OSError, ValueError):
            if server.poll() is not None:
                return None
            assert time.monotonic() < deadline, "the Spark Connect server did not start"
            time.sleep(1)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return str(reply.read().decode())


def test_connect_write_keeps_keys_out_of_ui_and_event_log(grpc_server: ServerHandle, tmp_path: Path) -> None:
    """Connect puts the write's plan text, its options' values included, in the UI and the event log;
    register() has the server blank the api_key there, and the write still works."""
    missing = connect_missing()
    if missing:
        pytest.skip(missing)
    grpc_server.script(api_key=KEY)  # the server refuses any other key: the write sent this one
    # a URI password is PostgreSQL's alone (other schemes refuse one); the regex's URI branch is checked above
    uri = grpc_server.uri
    (tmp_path / "events").mkdir()
    with connect_server(tmp_path / "events") as (url, ui, app):
        result = subprocess.run(
            [sys.executable, str(CLIENT), url, uri, KEY], capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr[-4000:]
        pages = {
            "stages": f"{app}/stages",
            "sql": f"{app}/sql?planDescription=true",
            "Connect tab": f"{ui}/connect/",
        }
        shown = {page: fetch(address) for page, address in pages.items()}
    assert len(grpc_server.arrived().ids()) == 300
    files = [path for path in (tmp_path / "events").rglob("*") if path.is_file()]  # rolling: a folder
    events = "".join(path.read_text(errors="replace") for path in files)
    texts = {**shown, "event log": events}
    assert [where for where, text in texts.items() if KEY in text] == []
    assert "ConnectOperationStarted" in events and "(redacted)" in events  # the plan text is there, blanked
    assert "(redacted)" in shown["stages"]
