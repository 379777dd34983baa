"""Files that task attempts stage in a folder on any filesystem pyarrow reaches, and their commit.

One protocol for every file a write leaves behind: Spark's dead letters and a bulk import's Parquet
files. A ``Folder`` is an absolute local path (on a cluster: a shared mount such as ``/dbfs/...`` or
``/Volumes/...``) or a URI (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``; schemes pyarrow lacks
through fsspec, ``az://`` with adlfs). Each task attempt writes its own file under
``_temporary-<job>/`` (``staged_name``; readers skip names starting with ``_``), one folder per job and
purpose (``_temporary-import-<job>/`` for an import's files) so concurrent jobs never delete each other's,
nor a job's dead letters its import files in a folder given for both; ``publish`` moves the files of
the attempts that succeeded to final names that depend only on the job and the partition (a retried or
speculative task leaves no duplicate, a replayed micro-batch overwrites), deletes the rest and says which of those attempts it
found no file of (a folder on each node's own disk, where the driver cannot see what the executors
wrote: its caller fails the job rather than lose them); ``discard`` drops a failed job's,
``delete_dir`` a folder of published files nothing will read.

Errors name the option that gave the folder: a folder that cannot be opened or written is a
``ConfigError`` on the driver before any task (``check_writable``); a failure later (a full disk, a
revoked permission) is a ``StagingFailed`` naming the option, the file and pyarrow's reason. Store
credentials come from the environment, never from the URI (options are logged and shown).
"""

from __future__ import annotations

import functools
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ConnectorError
from .keys import CONTAINER_SCHEMES, SECRET_PARAMETER, split_password

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = [
    "STAGING",
    "Folder",
    "Published",
    "StagingFailed",
    "refuse_credentials",
    "staged_name",
    "staging_dir",
]

STAGING = "_temporary"
_ATTEMPT_FILE = re.compile(r"part-(\d+)-attempt-(\d+)\.parquet$")
_S3_QUERY = frozenset({"endpoint_override", "scheme", "region"})


class StagingFailed(ConnectorError, OSError):
    """A staged file could not be written, moved or deleted; the message names the option and the file."""


def staging_dir(job: str, purpose: str = "") -> str:
    """The staging folder of one job (or micro-batch) and ``purpose``, relative to the folder.

    Each purpose has its own (dead letters ``""``, an import ``"import"``): one job's dead letters and
    import files staged in the same folder would otherwise be published, or deleted, as each other's."""
    return f"{STAGING}-{purpose}-{job}" if purpose else f"{STAGING}-{job}"


def staged_name(job: str, partition: int, attempt: int, subfolder: str = "", purpose: str = "") -> str:
    """One task attempt's file, relative to the folder; ``publish`` finds it by this name."""
    inner = f"{subfolder}/" if subfolder else ""
    return f"{staging_dir(job, purpose)}/{inner}part-{partition:05d}-attempt-{attempt}.parquet"


class Published(dict[str, list[str]]):
    """What ``Folder.publish`` did: the paths published per subfolder (a dict, as before), and in
    ``missing`` the (partition, attempt)s asked for whose files it did not find, sorted."""

    def __init__(self) -> None:
        super().__init__()
        self.missing: list[tuple[int, int]] = []


@dataclass(frozen=True, slots=True)
class Folder:
    """A folder, as an absolute path or a filesystem URI; picklable (the filesystem is made where used)."""

    uri: str
    option: str  # the option that named it, for messages
    max_retries: int = 5  # S3's retry count
    timeout_s: float = 30.0  # S3's connect and request timeouts

    @classmethod
    def parse(cls, text: str, option: str, *, max_retries: int = 5, timeout_s: float = 30.0) -> Folder:
        """``text`` as a folder: ``file://`` and relative paths become absolute; a URI holding a
        credential is refused."""
        text = text.strip()
        if not text:
            raise ConfigError(f"option {option}: empty path")
        if text.startswith("file://"):
            text = text[len("file://") :]
        if "://" not in text:
            text = os.path.abspath(os.path.expanduser(text))
        refuse_credentials(text, option)
        return cls(_without_trailing_slash(text), option, max_retries, timeout_s)

    @property
    def shown(self) -> str:
        """The URI for messages: no query (an endpoint, or anything else)."""
        return self.uri.split("?", 1)[0]

    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0].lower() if "://" in self.uri else "file"

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """(the filesystem, the folder's path on it); ``ConfigError`` for a URI it cannot open.

        Made once per process and folder: a task writes several files, and an ``S3FileSystem`` costs a
        client's set-up; the process id is in the key so a forked worker makes its own."""
        return _opened(self, os.getpid())

    def _open(self) -> tuple[pafs.FileSystem, str]:
        import pyarrow.fs as pafs

        if self.scheme == "file":
            return pafs.LocalFileSystem(), self.uri
        if self.scheme == "s3":
            return self._s3()
        try:
            fs, path = pafs.FileSystem.from_uri(self.uri)
        except (ValueError, OSError, NotImplementedError) as exc:  # a scheme pyarrow does not know
            return self._fsspec(exc)
        return fs, path.rstrip("/")

    def _s3(self) -> tuple[pafs.FileSystem, str]:
        """S3 with the connector's retry count and timeouts, and an endpoint from the URI's query."""
        from urllib.parse import parse_qsl, urlsplit

        import pyarrow.fs as pafs

        parts = urlsplit(self.uri)
        query = dict(parse_qsl(parts.query))
        unknown = sorted(set(query) - _S3_QUERY)
        if unknown:
            raise ConfigError(
                f"option {self.option}: unknown query parameter(s) {', '.join(unknown)} in {self.shown!r}; "
                f"allowed: {', '.join(sorted(_S3_QUERY))} (credentials come from the environment)"
            )
        if not parts.netloc:
            raise ConfigError(f"option {self.option}: no bucket in {self.shown!r}")
        kwargs: dict[str, Any] = {
            "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=self.max_retries + 1),
            "connect_timeout": self.timeout_s,
            "request_timeout": self.timeout_s,
        }
        kwargs.update(query)
        return pafs.S3FileSystem(**kwargs), f"{parts.netloc}{parts.path}".rstrip("/")

    def _fsspec(self, cause: Exception) -> tuple[pafs.FileSystem, str]:
        """Schemes pyarrow does not know, through fsspec (``az://`` with adlfs, say)."""
        try:
            import fsspec
            import pyarrow.fs as pafs
        except ImportError:
            raise ConfigError(f"option {self.option}: cannot open {self.shown!r}: {cause}") from None
        try:
            fs, path = fsspec.core.url_to_fs(self.uri)
        except (ImportError, ValueError) as exc:
            raise ConfigError(f"option {self.option}: cannot open {self.shown!r}: {exc}") from None
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), str(path).rstrip("/")

    def check_writable(self) -> Folder:
        """This folder, once made and written to (a probe file, deleted): on the driver, so an
        unreachable or read-only folder fails before any task, naming the option and the cause."""
        fs, root = self.filesystem()
        probe = f"{root}/.probe-{uuid.uuid4().hex[:8]}"  # a dot file: readers of *.parquet skip it
        try:
            fs.create_dir(root, recursive=True)
            with fs.open_output_stream(probe) as out:
                out.write(b"")
            fs.delete_file(probe)
        except OSError as exc:
            raise ConfigError(f"option {self.option}: cannot write to {self.shown!r}: {exc}") from None
        return self

    @contextmanager
    def failing_as(self, doing: str, name: str) -> Iterator[None]:
        """pyarrow's ``OSError`` inside, as a ``StagingFailed`` that names the option and the file."""
        try:
            yield
        except StagingFailed:
            raise
        except OSError as exc:
            raise StagingFailed(f"option {self.option}: cannot {doing} {self.shown}/{name}: {exc}") from None

    def write_bytes(self, name: str, data: bytes) -> str:
        """``data`` as the file ``name`` (made or replaced); its path."""
        fs, root = self.filesystem()
        with self.failing_as("write", name):
            fs.create_dir(f"{root}/{name}".rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(f"{root}/{name}") as out:
                out.write(data)
        return f"{root}/{name}"

    def open_output(self, name: str) -> Any:
        """A writable stream for ``name`` (its folders made as needed); writes to it may raise pyarrow's
        ``OSError``: wrap them in ``failing_as``."""
        fs, root = self.filesystem()
        with self.failing_as("write", name):
            fs.create_dir(f"{root}/{name}".rsplit("/", 1)[0], recursive=True)
            return fs.open_output_stream(f"{root}/{name}")

    def publish(
        self,
        job: str,
        attempts: Iterable[tuple[int, int]],
        final: Callable[[str, int], str],
        purpose: str = "",
    ) -> Published:
        """Move the files that ``attempts`` (partition, attempt) staged for ``job`` and ``purpose`` to
        ``final(subfolder, partition)``, delete the staging folder with every other attempt's files; the
        paths published, per subfolder (``""``: files staged at the top), and the attempts none of whose
        files were found (``Published.missing``): a folder on each node's own disk loses them without an
        error here."""
        import pyarrow.fs as pafs

        fs, root = self.filesystem()
        staging = f"{root}/{staging_dir(job, purpose)}"
        wanted = set(attempts)
        published = Published()
        found: set[tuple[int, int]] = set()
        with self.failing_as("publish", staging_dir(job, purpose)):
            if fs.get_file_info(staging).type == pafs.FileType.NotFound:
                published.missing = sorted(wanted)
                return published
            for info in fs.get_file_info(pafs.FileSelector(staging, recursive=True)):
                match = _ATTEMPT_FILE.search(info.path)
                if info.type != pafs.FileType.File or match is None:
                    continue
                partition, attempt = int(match.group(1)), int(match.group(2))
                if (partition, attempt) not in wanted:
                    continue
                found.add((partition, attempt))
                relative = info.path[len(staging) + 1 :]
                subfolder = relative.rsplit("/", 1)[0] if "/" in relative else ""
                target = f"{root}/{final(subfolder, partition)}"
                fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
                fs.move(info.path, target)
                published.setdefault(subfolder, []).append(target)
            fs.delete_dir(staging)
        published.missing = sorted(wanted - found)
        return published

    def not_shared(self, what: str, partitions: Iterable[int], consequence: str) -> StagingFailed:
        """The error for staged files the driver cannot find (``Published.missing``): the folder is not
        one the driver and the executors share, which no retry mends; ``consequence``: what is left."""
        shown = sorted(set(partitions))
        listed = ", ".join(map(str, shown[:10])) + (
            f" (and {len(shown) - 10} more)" if len(shown) > 10 else ""
        )
        return StagingFailed(
            f"option {self.option}: the driver cannot see the {what} the tasks staged under {self.option} "
            f"({self.shown}; no file of partition {listed}); {self.option} must be storage shared by the "
            "driver and the executors (s3://, gs://, abfss://, hdfs://, or a mount every node shares such as "
            f"/dbfs/... or /Volumes/...), not a folder on each node's own disk. {consequence}"
        )

    def delete_published(self, prefix: str) -> list[str]:
        """Delete the files at the folder's top whose names start with ``prefix`` (a job's published
        files, before it publishes them again); the paths deleted."""
        import pyarrow.fs as pafs

        fs, root = self.filesystem()
        deleted = []
        with self.failing_as("delete", f"{prefix}*"):
            for info in fs.get_file_info(pafs.FileSelector(root, allow_not_found=True)):
                if info.type == pafs.FileType.File and info.base_name.startswith(prefix):
                    fs.delete_file(info.path)
                    deleted.append(info.path)
        return deleted

    def discard(self, job: str, purpose: str = "") -> None:
        """Delete ``job``'s staging folder for ``purpose`` and whatever its attempts left in it."""
        self.delete_dir(staging_dir(job, purpose))

    def overlaps(self, other: Folder) -> bool:
        """This folder is ``other``, or one holds the other: their files would mix."""
        mine, theirs = _comparable(self), _comparable(other)
        return mine == theirs or mine.startswith(f"{theirs}/") or theirs.startswith(f"{mine}/")

    def delete_dir(self, name: str) -> None:
        """Delete the subfolder ``name`` and everything in it; nothing there is no error."""
        import pyarrow.fs as pafs

        fs, root = self.filesystem()
        path = f"{root}/{name}"
        with self.failing_as("delete", name):
            if fs.get_file_info(path).type != pafs.FileType.NotFound:
                fs.delete_dir(path)


def _without_trailing_slash(text: str) -> str:
    """``text`` without the trailing ``/`` of its path, a URI's query kept whole: ``s3://b/prefix/?q`` is
    ``s3://b/prefix?q`` (files go under ``prefix/<job>/``, and Pinecone must be told the same folder)."""
    path, mark, query = text.partition("?") if "://" in text else (text, "", "")
    return (path.rstrip("/") or "/") + mark + query


def _comparable(folder: Folder) -> str:
    """``folder`` as a path to compare: no query, the scheme lowercased, a local path with its links resolved."""
    if folder.scheme == "file":
        return os.path.realpath(folder.uri).rstrip("/") or "/"
    scheme, _, rest = folder.shown.partition("://")
    return f"{scheme.lower()}://{rest.rstrip('/')}"


@functools.lru_cache(maxsize=32)
def _opened(folder: Folder, pid: int) -> tuple[pafs.FileSystem, str]:
    """``folder``'s filesystem, made once in process ``pid`` (a failure is not kept: it raises again)."""
    return folder._open()


def _holds_password(uri: str) -> bool:
    """A ``user:password@`` (as ``keys.split_password`` reads it: a secret may hold an unencoded ``/``), not a
    path's ``:`` and ``@``: a user (an access key id) holds no ``/``, and ``host:8020/path@v2`` is a port."""
    split = split_password(uri) if "://" in uri else None
    if split is None:
        return False
    user = split[0].partition("://")[2].rstrip(":")
    return "/" not in user and not re.fullmatch(r"\d+(?:/.*)?", split[1], re.S)


def refuse_credentials(uri: str, option: str) -> None:
    """Options are logged and shown: store credentials belong in the environment, never in the URI.

    A password (``user:password@``, up to the last ``@``: a secret key may hold an unencoded ``/``, which
    urlsplit reads as the end of the host), a user (an access key id), or a query parameter whose name says
    it holds one (a SAS ``sig``, a ``token``) is refused; in ABFS and WASB URIs the part before ``@`` names
    the container (``abfss://container@account.dfs.core.windows.net/path``), so only a password there is."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(uri)
    secret = [k for k, _ in parse_qsl(parts.query) if SECRET_PARAMETER.search(k)]
    password = _holds_password(uri)
    user = "@" in parts.netloc and parts.scheme.lower() not in CONTAINER_SCHEMES
    if password or user or secret:
        raise ConfigError(
            f"option {option}: holds a credential (user:password@, or a query parameter such as "
            f"{', '.join(secret) or 'a key'}); give the store's credentials through the environment "
            "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, an instance role, GOOGLE_APPLICATION_CREDENTIALS, ...)"
        )
