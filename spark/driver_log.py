"""The ``vectordb.spark`` logger, as the driver's Python worker writes it: one place for both ends of a job."""

from __future__ import annotations

import logging

__all__ = ["log_line", "logger"]

logger = logging.getLogger("vectordb.spark")


def log_line(level: int, message: str) -> None:
    """Log on the driver's Python worker, whose stderr Spark copies to the driver log.

    Nobody configures logging in that process, so a handler is added the first time.
    """
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    logger.log(level, message)
