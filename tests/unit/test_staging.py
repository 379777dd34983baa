"""``staging.Folder``: the one protocol for the files task attempts stage (dead letters, bulk imports)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vectordb.connector.errors import ConfigError
from vectordb.connector.staging import Folder, StagingFailed, staged_name


def stage(folder: Folder, name: str, data: bytes) -> None:
    with folder.open_output(name) as out:
        out.write(data)


@settings(max_examples=40, deadline=None)
@given(
    attempts=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from(["", "ns-a", "__default__"])),
        unique=True,
        max_size=12,
    ),
    succeeded=st.dictionaries(st.integers(0, 3), st.integers(0, 2)),  # one attempt a partition succeeds
)
def test_publish_keeps_exactly_the_attempts_that_succeeded_and_leaves_no_staging(
    tmp_path_factory: pytest.TempPathFactory,
    attempts: list[tuple[int, int, str]],
    succeeded: set[tuple[int, int]],
) -> None:
    root = tmp_path_factory.mktemp("staged")
    folder = Folder.parse(str(root), "dead_letter_path").check_writable()
    for partition, attempt, sub in attempts:
        stage(folder, staged_name("job-1", partition, attempt, sub), f"{partition}/{attempt}/{sub}".encode())
    stage(folder, staged_name("job-2", 0, 0), b"another job's")  # a concurrent job: untouched
    published = folder.publish(
        "job-1", succeeded.items(), lambda sub, p: f"out/{sub or 'top'}/part-{p:05d}.parquet"
    )
    expected = {(p, a, sub) for p, a, sub in attempts if succeeded.get(p) == a}
    assert sorted(path for paths in published.values() for path in paths) == sorted(
        f"{root}/out/{sub or 'top'}/part-{p:05d}.parquet" for p, _, sub in expected
    )
    for p, a, sub in expected:
        assert (
            root / "out" / (sub or "top") / f"part-{p:05d}.parquet"
        ).read_bytes() == f"{p}/{a}/{sub}".encode()
    assert not (root / "_temporary-job-1").exists()
    assert (root / staged_name("job-2", 0, 0)).read_bytes() == b"another job's"


def test_discard_drops_one_jobs_files_only(tmp_path: Path) -> None:
    folder = Folder.parse(str(tmp_path), "import_uri")
    stage(folder, staged_name("a", 0, 1, "ns"), b"x")
    stage(folder, staged_name("b", 0, 1), b"y")
    folder.discard("a")
    folder.discard("never-staged")  # nothing there: no error
    assert sorted(os.listdir(tmp_path)) == ["_temporary-b"]


def test_paths_and_file_uris_become_absolute_and_credentials_are_refused(tmp_path: Path) -> None:
    assert Folder.parse(f"file://{tmp_path}/", "report_path").uri == str(tmp_path)
    assert Folder.parse("rel/dir", "report_path").uri == os.path.abspath("rel/dir")
    with pytest.raises(ConfigError, match="option dead_letter_path: empty path"):
        Folder.parse("  ", "dead_letter_path")
    for uri in ("s3://user:pw@bucket/p", "s3://bucket/p?secret_key=abc", "gs://b/p?token=t"):
        with pytest.raises(ConfigError, match="option dead_letter_path: holds a credential") as caught:
            Folder.parse(uri, "dead_letter_path")
        assert "abc" not in str(caught.value) and "pw" not in str(caught.value)


def test_a_folder_that_cannot_be_written_names_the_option_before_and_during_the_write(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_bytes(b"")  # a file where a folder must go: any user, root too, fails
    with pytest.raises(
        ConfigError, match=rf"option dead_letter_path: cannot write to '{tmp_path}/a-file/dl'"
    ):
        Folder.parse(str(tmp_path / "a-file" / "dl"), "dead_letter_path").check_writable()
    # the driver's check passed, then the folder went bad: the task's error names the option and the file
    folder = Folder.parse(str(tmp_path), "dead_letter_path").check_writable()
    (tmp_path / "_temporary-j").write_bytes(b"")
    with pytest.raises(
        StagingFailed, match=r"option dead_letter_path: cannot write .*_temporary-j/part-00002-attempt-7"
    ):
        folder.open_output(staged_name("j", 2, 7))
    with pytest.raises(StagingFailed, match=r"option report_path: cannot write .*a-file/j\.json"):
        Folder.parse(str(tmp_path), "report_path").write_bytes("a-file/j.json", b"{}")
    with pytest.raises(
        StagingFailed, match=r"option dead_letter_path: cannot publish .*/_temporary-j: .*Not a directory"
    ):
        folder.publish("j", [(2, 7)], lambda _, p: f"part-{p}.parquet")


def test_a_uri_no_filesystem_knows_is_a_config_error_naming_the_option() -> None:
    with pytest.raises(ConfigError, match=r"option import_uri: cannot open 'nosuchscheme://b/p'"):
        Folder.parse("nosuchscheme://b/p", "import_uri").filesystem()
    with pytest.raises(ConfigError, match=r"option import_uri: unknown query parameter.*access"):
        Folder.parse("s3://bucket/p?access=1", "import_uri").filesystem()


def test_a_folder_opens_its_filesystem_once_per_process(tmp_path: Path) -> None:
    folder = Folder.parse(str(tmp_path), "dead_letter_path")
    first, root = folder.filesystem()
    again, _ = Folder.parse(str(tmp_path), "dead_letter_path").filesystem()  # an equal folder, unpickled
    assert again is first and root == str(tmp_path)
    assert Folder.parse(str(tmp_path / "other"), "dead_letter_path").filesystem()[1] == str(
        tmp_path / "other"
    )
    s3 = Folder.parse("s3://bucket/p?endpoint_override=127.0.0.1:9", "import_uri")
    assert s3.filesystem()[0] is s3.filesystem()[0]  # an S3 client's set-up, paid once
