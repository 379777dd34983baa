"""Where dead letters and reports go: a directory on any filesystem pyarrow reaches, and its commit protocol.

A ``Location`` is an absolute local path (on a cluster: a shared mount such as ``/dbfs/...`` or
``/Volumes/...``) or a URI pyarrow knows (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``). Each task
attempt writes its dead letters to its own file under ``_temporary-<job>/`` (Spark's readers skip
names starting with ``_``), one folder per job so concurrent jobs never delete each other's;
``commit()`` moves the files of the attempts that succeeded to their final names and deletes the
rest, so a retried or speculative task leaves no duplicate rows behind. Final names depend only on
the job (or the micro-batch) and the partition, so a replayed micro-batch overwrites, never adds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vectordb.connector.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["Location", "staging_name"]

STAGING = "_temporary"


@dataclass(frozen=True, slots=True)
class Location:
    """A directory, as an absolute path or a filesystem URI; picklable (the filesystem is made on use)."""

    uri: str
    option: str  # the option that named it, for messages

    @classmethod
    def parse(cls, text: str, option: str) -> Location:
        text = text.strip()
        if not text:
            raise ConfigError(f"option {option}: empty path")
        if text.startswith("file://"):
            text = text[len("file://") :]
        if "://" not in text:
            text = os.path.abspath(os.path.expanduser(text))
        return cls(text, option)

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """(the filesystem, this directory's path on it)."""
        import pyarrow.fs as pafs

        if "://" not in self.uri:
            return pafs.LocalFileSystem(), self.uri
        try:
            fs, path = pafs.FileSystem.from_uri(self.uri)
        except (ValueError, OSError) as exc:
            raise ConfigError(f"option {self.option}: cannot open {self.uri!r}: {exc}") from None
        return fs, path.rstrip("/")

    def prepared(self) -> Location:
        """This location, after making sure the directory exists and can be written (on the driver)."""
        fs, root = self.filesystem()
        try:
            fs.create_dir(root, recursive=True)
            probe = f"{root}/.probe-{os.getpid()}"  # a dot file: Spark's readers skip it
            with fs.open_output_stream(probe) as out:
                out.write(b"")
            fs.delete_file(probe)
        except OSError as exc:
            raise ConfigError(f"option {self.option}: cannot write to {self.uri!r}: {exc}") from None
        return self

    def write_bytes(self, name: str, data: bytes) -> str:
        fs, root = self.filesystem()
        path = f"{root}/{name}"
        with fs.open_output_stream(path) as out:
            out.write(data)
        return path

    def open_output(self, name: str) -> Any:
        """A writable stream for ``name`` (its folders are made as needed)."""
        fs, root = self.filesystem()
        path = f"{root}/{name}"
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        return fs.open_output_stream(path)

    def publish(self, staged: list[tuple[str, str]], staging_dir: str) -> list[str]:
        """Move ``(staged name, final name)`` pairs into place, then delete ``staging_dir``; final paths."""
        fs, root = self.filesystem()
        done = []
        for source, target in staged:
            fs.move(f"{root}/{source}", f"{root}/{target}")
            done.append(f"{root}/{target}")
        self.discard(staging_dir)
        return done

    def discard(self, staging_dir: str) -> None:
        """Delete a staging directory and whatever failed or replaced attempts left in it."""
        import pyarrow.fs as pafs

        fs, root = self.filesystem()
        path = f"{root}/{staging_dir}"
        if fs.get_file_info(path).type != pafs.FileType.NotFound:
            fs.delete_dir(path)


def staging_name(job: str) -> str:
    """The staging directory of one job or micro-batch, relative to the location."""
    return f"{STAGING}-{job}"
