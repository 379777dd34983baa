"""A new user's first hour: the README's own set-up, in a fresh environment, then the README's own Spark
example in a new Python process with no register() call, read back with pymilvus.

The install command and the example are taken from README.md (between markers), so they cannot drift
from what is tested. The environment is made the way the README says (uv, the pinned constraints, the
strict editable install); packages come from uv's cache when it has them all (``--offline``: an index that
answers every revalidation with a new response would otherwise make uv build and keep pyspark's 1.4 GB
sdist again on every run), else from the index. Where there is Rust, the README's optional native
speedups are installed too, and must be the ones in use.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.uv import uv_command

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()

pytestmark = pytest.mark.slow


def readme_install_command(python: Path) -> list[str]:
    """The README's ``uv pip install … -e .``, aimed at ``python`` instead of ``.venv/bin/python``."""
    found = re.search(r"python3 -m uv pip install (--python \.venv/bin/python [^\n\\&]*-e \.)", README)
    assert found, "README.md's set-up has no `python3 -m uv pip install --python .venv/bin/python … -e .`"
    args = found.group(1).split()
    args[args.index("--python") + 1] = str(python)
    return [*uv_command(), "pip", "install", "--quiet", *args]


def readme_native_install_command(python: Path) -> list[str]:
    """The README's optional install of the native speedups, aimed at ``python``."""
    found = re.search(r"`python3 -m uv pip install (--python \.venv/bin/python \./connector/native)`", README)
    assert found, (
        "README.md's set-up has no `python3 -m uv pip install --python .venv/bin/python ./connector/native`"
    )
    args = found.group(1).split()
    args[args.index("--python") + 1] = str(python)
    return [*uv_command(), "pip", "install", "--quiet", *args]


def readme_spark_example() -> str:
    found = re.search(r"<!-- spark-example -->\n```python\n(.*?)```\n<!-- /spark-example -->", README, re.S)
    assert found, "README.md has no <!-- spark-example --> block"
    return found.group(1)


# a venv, an install, the native module's Rust build (LTO), then Spark: 240 s on a loaded machine
@pytest.mark.timeout(1200)
def test_the_readme_spark_example_works_after_the_readme_set_up(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (the README's set-up assumes Java 17)")
    venv = tmp_path / "venv"
    subprocess.run(
        [*uv_command(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    install = readme_install_command(python)
    if subprocess.run([*install, "--offline"], cwd=ROOT, capture_output=True, timeout=900).returncode != 0:
        subprocess.run(install, cwd=ROOT, check=True, timeout=900)
    if shutil.which("cargo") is not None:  # the README's optional step, where there is Rust
        subprocess.run(readme_native_install_command(python), cwd=ROOT, check=True, timeout=900)
        check = (
            "from vectordb.connector import jsonvec; from vectordb.connector.embedding import wire; "
            "assert wire.native_decoder() and jsonvec.native_encoder()"
        )
        subprocess.run([str(python), "-c", check], check=True, timeout=60)
    # a new session, as a user's script: no register() call; the environment activated, as the README says
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "VIRTUAL_ENV"))},
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    work = tmp_path / "work"
    work.mkdir()
    (work / "example.py").write_text(readme_spark_example())
    run = subprocess.run(
        ["python", "example.py"], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert "register" not in readme_spark_example()
    read_back = (
        "import json\n"
        "from pymilvus import MilvusClient\n"
        "from vectordb.connector.backends.milvus import lite\n"
        "client = MilvusClient(uri='http://' + lite.ensure_server('./spark-vectors.db'))\n"
        "rows = client.query('vectors', filter='', output_fields=['id', 'vector', 'title'], limit=10000)\n"
        "lite.stop('./spark-vectors.db')\n"
        "print(json.dumps([[r['id'], [float(v) for v in r['vector']], r['title']] for r in rows]))\n"
    )
    back = subprocess.run(
        ["python", "-c", read_back], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert back.returncode == 0, back.stderr[-4000:]
    stored = {row_id: (vector, title) for row_id, vector, title in json.loads(back.stdout.splitlines()[-1])}
    import numpy as np

    expected = {
        f"doc-{i}": ([float(x) for x in np.array([i / 100, 1.0, 0.5, -0.25], dtype=np.float32)], f"title {i}")
        for i in range(1000)
    }
    assert stored == expected
