"""What a write did: rows written and failed (with ids, input positions and reasons), requests, retries, bytes.

A ``WriteReport`` is small (ids, positions and messages, never vectors or credentials), cheap to
pickle, and mergeable, so Spark tasks can return it as their commit message and Beam bundles as an
output; ``merge`` is associative and ``WriteReport()`` is its identity.

A failed row is named twice: by its id, as the database knows it (text; ``None`` for a row without
one), and by its position in the write's input (``BatchFailure.positions``), which finds the row
whatever its id is: a repeated id, or one the input holds in another form (a UUID's 16 bytes).
``dead_letters`` turns positions back into the input's rows.

Deletes (option ``op_column``, ``Client.delete``) are accounted as upserts are: a deleted row is
``written`` (and counted in ``deleted`` too), a failed one is a ``BatchFailure`` whose ``op`` is
``"delete"``.
"""

from __future__ import annotations

from collections import Counter

import msgspec

__all__ = ["STOPPED", "BatchFailure", "WriteReport"]

# the error_type of rows read but never sent because the write stopped on a fatal error
STOPPED = "Stopped"


class BatchFailure(msgspec.Struct, frozen=True, kw_only=True):
    """Rows that failed together, for one reason."""

    ids: tuple[str | None, ...]  # None: the row had no id
    # each row's offset in the input of the ``Client.write`` call that reported it (counted across all
    # its chunks), in the order of ``ids``; () where the rows were named by id only
    positions: tuple[int, ...] = ()
    error: str  # the reason, as the server or the validator said it
    # class name from errors.py; "Invalid" for rows refused before sending; "NotIsolated" for rows of a
    # refused batch left unisolated (budget spent, or the write stopped): they may be good; "Stopped"
    # (``STOPPED``) for rows read but never sent because the write stopped on a fatal error
    error_type: str = "Rejected"
    retryable: bool = False
    # sends of the last request holding these rows (not isolation's larger ones before it); 0 = never sent
    attempts: int = 0
    # rows that failed without the server saying which (a bulk import that skipped records): counted, not named
    unnamed: int = 0
    # what the rows were for: "upsert", or "delete" (option op_column, Client.delete); "upsert" also for
    # rows whose op named neither, whose error says so
    op: str = "upsert"

    @property
    def rows(self) -> int:
        return len(self.ids) + self.unnamed

    def __repr__(self) -> str:
        head = ", ".join(map(str, self.ids[:3])) + (", …" if len(self.ids) > 3 else "")
        if self.unnamed:
            head += (", " if head else "") + f"{self.unnamed} unnamed"
        what = "" if self.op == "upsert" else f" {self.op}"
        return f"BatchFailure({self.rows}{what} rows [{head}]: {self.error_type}: {self.error})"


class WriteReport(msgspec.Struct, kw_only=True):
    """The account of one write (a call, a task, a bundle or a whole job after ``merge``)."""

    written: int = 0  # rows applied: upserted, or deleted (their ids are gone, or never were there)
    failed: int = 0
    deleted: int = 0  # of ``written``, the rows that were deletes
    requests: int = 0  # requests sent, retries included
    retries: int = 0
    throttled: int = 0  # replies that said "slow down"
    bytes_sent: int = 0  # request bodies, retries included
    embedded: int = 0  # rows whose vectors the embedding stage made (options embed_*)
    embed_requests: int = 0  # requests to the embedding endpoint, retries and isolation included
    embed_retries: int = 0  # of ``embed_requests``, those sent again
    embed_throttled: int = 0  # embedding replies that said "slow down"
    elapsed_s: float = 0.0
    failures: list[BatchFailure] = []
    # a fatal error stopped the write (the database's: bad credentials, no such target, unreachable, a
    # systemic refusal; or the embedding stage's): rows after it were not read or not sent
    stopped: bool = False

    @property
    def ok(self) -> bool:
        return self.failed == 0

    @property
    def failed_ids(self) -> list[str | None]:
        return [i for f in self.failures for i in f.ids]

    def merge(self, other: WriteReport) -> WriteReport:
        """A new report holding both; elapsed time is the longer of the two (they ran side by side)."""
        return WriteReport(
            written=self.written + other.written,
            failed=self.failed + other.failed,
            deleted=self.deleted + other.deleted,
            requests=self.requests + other.requests,
            retries=self.retries + other.retries,
            throttled=self.throttled + other.throttled,
            bytes_sent=self.bytes_sent + other.bytes_sent,
            embedded=self.embedded + other.embedded,
            embed_requests=self.embed_requests + other.embed_requests,
            embed_retries=self.embed_retries + other.embed_retries,
            embed_throttled=self.embed_throttled + other.embed_throttled,
            elapsed_s=max(self.elapsed_s, other.elapsed_s),
            failures=[*self.failures, *other.failures],
            stopped=self.stopped or other.stopped,
        )

    def reasons(self, most: int = 5) -> list[tuple[str, int]]:
        """The distinct failure reasons with their row counts, most rows first."""
        counts: Counter[str] = Counter()
        for f in self.failures:
            op = "" if f.op == "upsert" else f" ({f.op})"
            counts[f"{f.error_type}{op}: {f.error}"] += f.rows
        return counts.most_common(most)

    def summary(self) -> str:
        """One line: what was written and failed, with the traffic behind it."""
        total = self.written + self.failed
        state = "OK" if self.ok else ("FAILED" if self.written == 0 else "PARTIAL")
        stopped = sum(f.rows for f in self.failures if f.error_type == STOPPED)
        if stopped or self.stopped:  # a fatal error stopped the write: say so, and how many rows it dropped
            state = f"STOPPED ({stopped} rows dropped)"
        deletes = f" ({self.deleted} deletes)" if self.deleted else ""
        line = (
            f"{state}: {self.written}/{total} written{deletes}, {self.failed} failed; "
            f"{self.requests} requests, {self.retries} retries, {self.throttled} throttled, "
            f"{self.bytes_sent / 1e6:.1f} MB"
        )
        if self.embed_requests:
            line += (
                f"; {self.embedded} embedded in {self.embed_requests} requests, {self.embed_retries} retries, "
                f"{self.embed_throttled} throttled"
            )
        if self.elapsed_s > 0:
            line += f", {self.elapsed_s:.2f} s ({total / self.elapsed_s:,.0f} rows/s)"
        return line

    def __repr__(self) -> str:
        text = f"WriteReport({self.summary()})"
        reasons = self.reasons()
        if reasons:
            text += "; " + "; ".join(f"{n}× {r}" for r, n in reasons)
        return text

    __str__ = __repr__
