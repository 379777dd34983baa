"""A database's bulk path, declared by its backend (``Backend.bulk()``): rows staged as files by the
workers, then imported by the database itself, instead of one upsert request per batch.

Rows reach the staged files the way they reach upserts (``Client.batches``: any accepted input, the
checks, ids, embeddings), so a bulk write refuses what an upsert would. Spark and Beam drive a bulk
path without naming a database:

1. ``check`` on the driver (or while a Beam pipeline is built), before any worker starts;
2. ``stager`` in each task or bundle: ``write`` stages rows and returns their report, ``close``
   completes the files (before the task reports), ``partition`` names the task's files;
3. ``finish`` on the driver once every task succeeded: publish the files of the attempts that
   succeeded, import them, wait, and return the write's report; ``abort`` drops them otherwise.
   Rows count as written only once imported: under ``on_error=fail`` rows refused while staging fail
   the write before any import starts (an import into a new namespace cannot be run again), and
   staged rows whose files the driver cannot find (a folder on each node's own disk) fail it too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .policy import NOT_IMPORTED

if TYPE_CHECKING:
    from .client import Client
    from .errors import WriteFailed
    from .options import BackendOptions
    from .report import WriteReport

__all__ = ["BulkPath", "Stager", "bulk_path", "new_job", "refused_while_staging"]


class Stager(Protocol):
    """One task attempt's staged files."""

    partition: int

    def write(self, data: Any, namespace: str | None = None) -> WriteReport: ...

    def close(self) -> None: ...


class BulkPath(Protocol):
    """What a backend's ``bulk()`` returns for a write that goes the bulk way."""

    def check(self, client: Client, *, streaming: bool = False, overwrite: bool = False) -> None:
        """Everything checkable before any worker starts; ``streaming``: the input never ends."""
        ...

    def stager(self, client: Client, job: str, partition: int, attempt: int = 0) -> Stager: ...

    def finish(
        self,
        staged: WriteReport,
        attempts: Sequence[tuple[int, int]],
        job: str,
        progress: Callable[[str], None] | None = None,
    ) -> WriteReport:
        """Import the files of the ``(partition, attempt)``s that succeeded (one that staged nothing may
        be among them); the write's report. Raises ``WriteFailed`` (``on_error=fail`` and rows refused
        while staging) or ``StagingFailed`` (staged files the driver cannot find) before any import."""
        ...

    def abort(self, job: str) -> None:
        """Drop what the tasks of a failed job staged. Never raises for files it cannot delete: it runs while
        another error fails the write, which it must not replace; it logs what stays instead."""
        ...


def bulk_path(options: BackendOptions) -> BulkPath | None:
    """The bulk path a write with ``options`` takes, or ``None`` (it upserts)."""
    from .client import load_backend

    return load_backend(options).bulk()


def new_job() -> str:
    """A name for one bulk write's staged files."""
    return f"job-{uuid.uuid4().hex[:12]}"


def refused_while_staging(staged: WriteReport, target: str) -> WriteFailed:
    """The error of an ``on_error=fail`` bulk write whose staging refused rows, raised before any import starts.

    Its report accounts for every row given (written + failed): the refused rows with their reasons, and the
    rows staged but not imported as one unnamed failure, so no row goes missing from the count."""
    import msgspec

    from .errors import WriteFailed
    from .report import BatchFailure

    named = ", ".join(map(str, staged.failed_ids[:5]))
    first = f" (first ids: {named})" if named else ""
    reasons = "; ".join(f"{n}x {reason}" for reason, n in staged.reasons(3))
    message = (
        f"{target}: {staged.failed} of {staged.written + staged.failed} rows were refused while staging{first}: "
        f"{reasons}. Nothing was imported: under on_error=fail a refused row stops the import before it starts, "
        "so the namespace is still new and the write can run again once those rows are fixed or left out "
        "(on_error='report' or 'dead_letter' imports the other rows and counts or keeps the refused ones)."
    )
    failures = list(staged.failures)
    if staged.written:
        failures.append(
            BatchFailure(
                ids=(),
                error=f"{staged.written} staged rows were not imported: rows refused while staging stopped the "
                "import under on_error=fail",
                error_type=NOT_IMPORTED,
                unnamed=staged.written,
            )
        )
    report = msgspec.structs.replace(
        staged, written=0, failed=staged.failed + staged.written, failures=failures
    )
    return WriteFailed(message, report)
