"""The Beam job is the package's command ``vectordb-beam`` (``vectordb.beam.load``): this file keeps
``python -m jobs.beam_ingest …`` working in a checkout. ``--help`` lists the flags.
"""

from __future__ import annotations

import sys

from vectordb.beam.load import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
