"""The ``on_error`` policy, applied in one place for the client, Spark's commit and Beam's sink.

``fail``: any failed row raises ``WriteFailed`` with the counts and the first reasons.
``report`` and ``dead_letter``: the write succeeds; the caller has counted or stored the failures.
"""

from __future__ import annotations

from .errors import WriteFailed
from .report import WriteReport

__all__ = ["HINT", "IMPORT_HINT", "enforce", "hint"]

# the last sentence of a ``fail`` policy's error, in the API's words; a command puts its flags instead
HINT = "Set on_error='report' or 'dead_letter' to keep the rows that did land without failing."
# ... and of a bulk import's that left staged rows out: what it imported stays whatever the policy, and
# another import into its namespace (which now exists) is refused
IMPORT_HINT = (
    "What the import wrote stays, and another import into that namespace is refused: write the same rows "
    "with write_mode=upsert (an upsert by id replaces the rows already imported)."
)
NOT_IMPORTED = "NotImported"  # the error type of staged rows a bulk import did not write


def hint(report: WriteReport) -> str:
    """The advice that ends a ``fail`` policy's error for ``report``."""
    return IMPORT_HINT if any(f.error_type == NOT_IMPORTED for f in report.failures) else HINT


def enforce(report: WriteReport, on_error: str, target: str) -> WriteReport:
    """Raise ``WriteFailed`` if the policy is ``fail`` and any row failed; else return the report."""
    if on_error == "fail" and not report.ok:
        # a row that failed before its id was read (a line that is not JSON) has none: not "None"
        sample = ", ".join("(no id)" if i is None else str(i) for i in report.failed_ids[:5])
        first = f" (first ids: {sample})" if sample else ""  # rows a bulk import only counted have no ids
        raise WriteFailed(
            f"{target}: {report.failed} of {report.written + report.failed} rows failed{first}; {report!r}. {hint(report)}",
            report,
        )
    return report
