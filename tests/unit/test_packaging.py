"""Every package in the source tree is in pyproject's ``packages``: a regular install (pip, a wheel, Spark
executors on a cluster) ships exactly that list, while an editable one finds any folder."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_source_package_is_listed_for_a_regular_install() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set()
    for name, folder in setuptools["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            relative = init.parent.relative_to(base).parts
            found.add(".".join((name, *relative)))
    found.discard("vectordb.spark.pyspark_vectordb")  # mapped on its own, as pyspark_vectordb
    assert found == listed
