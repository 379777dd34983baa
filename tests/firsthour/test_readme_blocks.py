"""Every fenced block in the README runs as written, in order, in a fresh copy of the project.

Each block carries a marker on the line before it: ``<!-- run: NAME -->`` (run here, in README order,
bash blocks with ``bash``, Python blocks with the environment's Python, in one working directory),
``<!-- hosted -->`` (needs a hosted service: only parsed), ``<!-- set-up -->``, ``<!-- test-command -->``
and ``<!-- spark-example -->`` (run by the first-hour install test and by CI themselves). A block without
a marker fails here, so no new block can go untested by accident. The copy holds the checked-in files
and this checkout's environment (``.venv``), as a fresh clone after the set-up block would; the servers a
block starts are stopped by the block itself, and the embedded databases by this test.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"(?:<!-- ([\w-]+)(?:: ([\w-]+))? -->\n)?```(\w*)\n(.*?)^```", re.S | re.M)
MARKERS = {"run", "hosted", "set-up", "test-command", "spark-example"}

pytestmark = pytest.mark.slow


def blocks() -> list[tuple[str, str, str, str]]:
    """(marker, name, language, text) of every fenced block, in README order."""
    return [(m.group(1) or "", m.group(2) or "", m.group(3), m.group(4)) for m in BLOCK.finditer(README)]


def test_every_block_says_whether_it_runs() -> None:
    unmarked = [text.splitlines()[0] for marker, _, _, text in blocks() if marker not in MARKERS]
    assert not unmarked, f"README blocks without a marker (<!-- run: NAME --> or <!-- hosted -->): {unmarked}"
    names = [name for marker, name, _, _ in blocks() if marker == "run"]
    assert len(names) == len(set(names)) and {"main-job", "read-back", "embeddings"} <= set(names)


@pytest.mark.parametrize("index", [i for i, b in enumerate(blocks()) if b[0] == "hosted"])
def test_a_hosted_block_is_at_least_valid_code(index: int) -> None:
    _, _, language, text = blocks()[index]
    if language == "python":
        ast.parse(text)
    else:
        subprocess.run(["bash", "-n"], input=text, text=True, check=True)


def fresh_copy(where: Path) -> Path:
    """The checked-in files (as a clone has them) and this checkout's environment."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source, target = ROOT / os.fsdecode(name), where / os.fsdecode(name)
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (where / ".venv").symlink_to(ROOT / ".venv")
    return where


def stop_embedded_servers(work: Path) -> None:
    code = (
        "import sys\nfrom vectordb.connector.backends.milvus import lite\n"
        "for path in sys.argv[1:]:\n    lite.stop(path)\n"
    )
    paths = [str(p) for p in work.glob("*.db")]
    if paths:
        subprocess.run([sys.executable, "-c", code, *paths], cwd=work, timeout=120, check=False)


# the README's jobs, one after another, each a Spark job with its own bound (900 s)
@pytest.mark.timeout(1800)
def test_the_runnable_blocks_run_in_order_as_written(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("the README's jobs run Spark, which needs Java 17")
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no .venv beside the checkout: the README's set-up makes it")
    work = fresh_copy(tmp_path / "clone")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "VIRTUAL_ENV"))},
        "PYSPARK_PYTHON": str(work / ".venv" / "bin" / "python"),  # as the README says for Spark
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    outputs: dict[str, str] = {}
    try:
        for marker, name, language, text in blocks():
            if marker != "run":
                continue
            command = ["bash", "-c", text] if language == "bash" else [".venv/bin/python", "-c", text]
            done = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=900, check=False
            )
            outputs[name] = done.stdout + done.stderr
            assert done.returncode == 0, f"block {name!r}:\n{outputs[name][-4000:]}"
    finally:
        stop_embedded_servers(work)
    assert re.search(r"10000 of 10000 rows|10000/10000 written", outputs["main-job"]), outputs["main-job"][
        -2000:
    ]
    assert "'count(*)': 10000" in outputs["read-back"]
    shown = outputs["embeddings"]
    assert "written:  398 of 400 rows (2 failed)" in shown
    assert "maximum context length is 512 tokens" in shown and "holds an empty string" in shown
    with socket.socket() as probe:  # the block stopped the server it started
        assert probe.connect_ex(("127.0.0.1", 8088)) != 0
