from __future__ import annotations

import subprocess
import sys

HEAVY = ("grpc", "pyarrow", "numpy", "pyspark", "apache_beam", "httpx", "psycopg", "pymilvus")


def test_import_pulls_in_no_heavy_module() -> None:
    code = (
        "import sys, vectordb.connector as c; c.WriteReport; c.ConfigError; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
