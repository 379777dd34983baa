"""Ctrl-C while ``vectordb-beam`` writes is one line and exit status 130. Beam's runner logged the
interrupt (``ERROR:apache_beam.runners.common:KeyboardInterrupt [while running 'Write/…']``) with an
18-line trace before the command's own line; the command now drops that record."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("apache_beam")
pytest.importorskip("milvus_lite")

BEAM = Path(sys.executable).with_name("vectordb-beam")


def interrupt_when_writing(
    command: list[str], db: Path, wait_s: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run ``command``, send it one SIGINT once rows are arriving in ``db``, and wait for it to end."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a background job of a shell inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + wait_s
        while not written_to(db) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert process.poll() is None, process.communicate()
        time.sleep(3)  # a few batches into the write: the interrupt lands in the sink's DoFn
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=wait_s)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def written_to(db: Path) -> bool:
    """Milvus Lite has made the collection's segment files: rows are being written."""
    collections = db / "collections"
    return collections.is_dir() and any(p.is_file() for p in collections.rglob("*"))


@pytest.mark.skipif(not BEAM.exists(), reason="the vectordb-beam command is not installed")
def test_ctrl_c_while_writing_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    run = interrupt_when_writing([str(BEAM), "--sample", "300000", "--uri", f"milvus+lite://{db}"], db)
    assert run.returncode == 130, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "KeyboardInterrupt [while running" not in run.stderr, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("vectordb-beam: interrupted; rows already written stay written"), lines
