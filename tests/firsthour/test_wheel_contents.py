"""What the wheel holds beside the code: each package a user imports carries its PEP 561 ``py.typed``
marker, so a type checker reads its annotations (``from vectordb.spark import register`` and the rest)
instead of saying "missing library stubs or py.typed marker"."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

from tests.uv import uv_command

ROOT = Path(__file__).resolve().parents[2]
TYPED = ("vectordb.connector", "vectordb.spark", "vectordb.beam", "pyspark_vectordb")


def source_tree(into: Path) -> Path:
    """The checkout's files (tracked, and new ones not ignored) copied to ``into``: a build there starts
    clean, where the checkout's own ``build/`` and ``*.egg-info`` of an earlier build would hand setuptools
    files that the package data no longer names."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def test_every_package_a_user_imports_ships_its_py_typed_marker(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    tree = source_tree(tmp_path / "src")
    built = subprocess.run(
        [*uv_command(), "build", "--wheel", "--quiet", "--out-dir", str(dist), str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    (wheel,) = dist.glob("vectordb_connector-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    missing = [package for package in TYPED if package.replace(".", "/") + "/py.typed" not in names]
    assert missing == []
