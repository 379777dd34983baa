"""The main job is the package's command ``vectordb-load`` (``vectordb.spark.load``): this file keeps
``python jobs/ingest.py …``, ``python -m jobs.ingest …`` and ``spark-submit jobs/ingest.py …`` working in a
checkout. ``--help`` lists the flags.
"""

from __future__ import annotations

import sys

from vectordb.spark.load import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
