"""The driver's end of a write: merge the tasks' reports, publish dead letters, log, apply ``on_error``.

``commit`` runs once per job (or micro-batch) after every task succeeded: the reports are merged,
the dead-letter files of the attempts that succeeded are moved into place (and the rest deleted; one
the driver cannot find fails the job, as ``dead_letter_path`` on each node's own disk would lose it),
the report is written to ``report_path`` if given (also when a bulk import fails the job: from the
error's report), one summary line is logged, and then the ``on_error`` policy decides: ``fail`` raises ``WriteFailed`` (the job fails, with the counts and the
first reasons), ``report`` and ``dead_letter`` let it succeed. ``abort`` cannot undo anything:
upserts that reached the database stay there. It says how many rows the finished tasks wrote (or,
for a bulk import, staged: a rerun of an import is not the idempotent upsert a rerun of upserts is).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from vectordb.connector.bulk import bulk_path
from vectordb.connector.errors import ConnectorError
from vectordb.connector.policy import enforce
from vectordb.connector.report import WriteReport
from vectordb.connector.staging import Folder, StagingFailed, staging_dir

from .driver_log import log_line
from .task import TaskReport

if TYPE_CHECKING:
    from .plan import WritePlan

__all__ = ["JobReport", "abort_job", "commit_job"]


class TaskSummary(msgspec.Struct, frozen=True, kw_only=True):
    partition: int
    attempt: int
    pid: int
    client_tasks: int
    written: int
    failed: int
    elapsed_s: float


class JobReport(msgspec.Struct, frozen=True, kw_only=True):
    """What ``report_path`` receives for each job or micro-batch (JSON)."""

    job: str
    target: str
    summary: str
    written: int
    failed: int
    deleted: int  # of written, the rows that were deletes (option op_column)
    requests: int
    retries: int
    throttled: int
    bytes_sent: int
    embedded: int = 0  # the embedding stage's (options embed_*): rows embedded, requests, retries, throttled
    embed_requests: int = 0
    embed_retries: int = 0
    embed_throttled: int = 0
    elapsed_s: float
    reasons: list[tuple[str, int]]
    failed_ids_sample: list[str | None]
    dead_letter_files: list[str]
    tasks: list[TaskSummary]


def commit_job(plan: WritePlan, messages: Sequence[object], job: str, *, again: bool = False) -> WriteReport:
    """Finish a job whose tasks all succeeded; raises ``WriteFailed`` under ``on_error="fail"``. ``again``:
    the job may have been committed before under this name (a micro-batch Spark runs again)."""
    tasks = _task_reports(messages)
    report = _merged(tasks)
    files: list[str] = []
    if plan.dead_letters is not None:
        # a micro-batch run again replaces its letters: an earlier run's may name rows this one wrote
        if again:
            plan.dead_letters.delete_published(f"{job}-part-")
        staged = [(t.partition, t.attempt_id) for t in tasks if t.dead_letters]
        published = plan.dead_letters.publish(
            job, staged, lambda _, partition: f"{job}-part-{partition:05d}.parquet"
        )
        if published.missing:  # letters the driver cannot see would be lost without a word
            raise _letters_unseen(plan.dead_letters, plan, job, tasks, published.missing)
        files = [path for paths in published.values() for path in paths]
    bulk = bulk_path(plan.options)
    if bulk is not None:  # the tasks staged files: the database imports them
        attempts = [(t.partition, t.attempt_id) for t in tasks if t.report.written]  # rows staged
        try:
            report = bulk.finish(report, attempts, job, lambda m: log_line(logging.INFO, m))
        except ConnectorError as exc:  # refused rows under on_error=fail, an import that failed or ran on
            if exc.report is not None:  # the job's account all the same: report_path and the log get it
                try:
                    _record(plan, job, exc.report, tasks, files)
                except StagingFailed as unwritten:  # the error to raise is the one above
                    log_line(logging.WARNING, f"{job}: its report was not written: {unwritten}")
            raise
    _record(plan, job, report, tasks, files)
    return enforce(report, plan.options.on_error, plan.target)


def _record(
    plan: WritePlan, job: str, report: WriteReport, tasks: list[TaskReport], files: list[str]
) -> None:
    """The job's report to ``report_path`` (if given) and its summary line to the log."""
    if plan.reports is not None:
        plan.reports.write_bytes(
            f"{job}.json", msgspec.json.encode(_job_report(plan, job, report, tasks, files))
        )
    log_line(logging.INFO if report.ok else logging.WARNING, _summary_line(plan, job, report, tasks, files))


def abort_job(plan: WritePlan, messages: Sequence[object], job: str) -> None:
    """Say what finished tasks already wrote (it stays: upserts cannot be rolled back) or, for an import, staged
    (a rerun is another import, refused once a namespace exists); drop staged files."""
    tasks = _task_reports(messages)
    report = _merged(tasks)
    bulk = bulk_path(plan.options)
    if bulk is None:
        line = (
            f"{job} into {plan.target} failed: {len(tasks)} tasks had finished and wrote {report.written} "
            "rows, which stay written (upserts cannot be rolled back); running the job again upserts the same ids."
        )
    else:  # a rerun imports only into a namespace that does not exist yet
        line = (
            f"{job} into {plan.target} failed: {len(tasks)} tasks had finished and staged {report.written} "
            "rows (the staged files the driver can reach are deleted). If the commit started an import (its "
            "log says so), what it imported stays and its namespace now exists, which another import refuses: "
            "write those rows with write_mode=upsert; otherwise nothing was imported and the job can run again."
        )
    if report.failed:  # their dead letters are dropped with the job: say what they held
        ids = ", ".join(map(str, report.failed_ids[:5]))
        line += f" Those tasks also failed {report.failed} rows (first ids: {ids}): {_first_reasons(report)}."
    log_line(logging.WARNING, line)
    if plan.dead_letters is not None:
        try:
            plan.dead_letters.discard(job)
        except StagingFailed as left:  # Spark reports the job's own error: only say what is left behind
            log_line(
                logging.WARNING, f"{job}: the staged dead letters stay in {plan.dead_letters.shown}: {left}"
            )
    if bulk is not None:  # drop the staged files (a delete that fails is logged, not raised)
        bulk.abort(job)


def _task_reports(messages: Sequence[object]) -> list[TaskReport]:
    return [m for m in messages if isinstance(m, TaskReport)]  # None: a task that failed


def _merged(tasks: list[TaskReport]) -> WriteReport:
    return functools.reduce(WriteReport.merge, (t.report for t in tasks), WriteReport())


def _letters_unseen(
    folder: Folder, plan: WritePlan, job: str, tasks: list[TaskReport], missing: Sequence[tuple[int, int]]
) -> StagingFailed:
    """The job fails rather than succeed without the letters: its report would say where they are."""
    lost = {attempt for _, attempt in missing}
    rows = sum(t.dead_letter_rows for t in tasks if t.attempt_id in lost)
    report = _merged(tasks)
    if bulk_path(plan.options) is None:
        kept = f"The job's {report.written} written rows stay written (upserts cannot be rolled back)"
    else:
        kept = f"Nothing was imported ({report.written} rows were staged)"
    return folder.not_shared(
        "dead letters",
        (partition for partition, _ in missing),
        f"{kept}; the {rows} dead letters of those tasks stay where they wrote them "
        f"({staging_dir(job)}/ on the executors' own disks).",
    )


def _first_reasons(report: WriteReport) -> str:
    return "; ".join(f"{n}x {reason}" for reason, n in report.reasons(3))


def _summary_line(
    plan: WritePlan, job: str, report: WriteReport, tasks: list[TaskReport], files: list[str]
) -> str:
    line = f"{job} into {plan.target}: {report.summary()}; {len(tasks)} tasks"
    if report.failed:
        line += f"; first reasons: {_first_reasons(report)}"
    if files and plan.dead_letters is not None:
        rows = sum(t.dead_letter_rows for t in tasks)
        line += f"; {rows} dead letters in {plan.dead_letters.uri}"
    return line


def _job_report(
    plan: WritePlan, job: str, report: WriteReport, tasks: list[TaskReport], files: list[str]
) -> JobReport:
    return JobReport(
        job=job,
        target=plan.target,
        summary=report.summary(),
        written=report.written,
        failed=report.failed,
        deleted=report.deleted,
        requests=report.requests,
        retries=report.retries,
        throttled=report.throttled,
        bytes_sent=report.bytes_sent,
        embedded=report.embedded,
        embed_requests=report.embed_requests,
        embed_retries=report.embed_retries,
        embed_throttled=report.embed_throttled,
        elapsed_s=report.elapsed_s,
        reasons=report.reasons(10),
        failed_ids_sample=report.failed_ids[:100],
        dead_letter_files=files,
        tasks=[
            TaskSummary(
                partition=t.partition,
                attempt=t.attempt,
                pid=t.pid,
                client_tasks=t.client_tasks,
                written=t.report.written,
                failed=t.report.failed,
                elapsed_s=t.report.elapsed_s,
            )
            for t in sorted(tasks, key=lambda t: t.partition)
        ],
    )
