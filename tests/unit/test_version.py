"""``vectordb.connector.__version__`` is the installed distribution's version, read only when asked for:
``importlib.metadata`` costs more than the package's own import (``test_lazy_import`` holds that time)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import vectordb.connector


def test_the_version_is_the_installed_distributions() -> None:
    assert vectordb.connector.__version__ == version("vectordb-connector")


def test_importing_the_package_does_not_read_the_metadata() -> None:
    code = "import sys, vectordb.connector; print('importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
