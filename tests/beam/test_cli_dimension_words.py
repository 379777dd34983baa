"""A dimension mismatch blamed "option dimension (4)", an option the user never set: ``vectordb-beam`` takes
the most common vector length among the input's first rows (or ``--dim``) and sets it as option
``dimension`` itself. The one line now names what the user gave: the input's vectors, or ``--dim``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main
from vectordb.connector.cli import run_command
from vectordb.connector.errors import DimensionMismatch

AFTER = "; write to another collection (--collection NAME) or database (--uri) (--debug shows the trace)"


def four_d_rows(path: Path) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"r{i}", "values": [0.1, 0.2, 0.3, 0.4]}) + "\n" for i in range(5))
    )
    return path


def mismatch_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["--runner=FnApiRunner", *argv]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("vectordb-beam: ")]
    return line


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ([], "the input's vectors (most of length 4)"),
        (["--dim", "4"], "--dim 4"),
        (["--option=dimension=4"], "option dimension (4)"),  # the user's own option: named as given
    ],
)
def test_the_line_names_what_gave_the_dimension(
    flags: list[str], said: str, rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=8)  # an index made 8-d by an earlier run
    source = four_d_rows(tmp_path / "rows.jsonl")
    line = mismatch_line([f"--input={source}", f"--uri={rest_server.uri}", *flags], capsys)
    assert line.startswith(f"vectordb-beam: DimensionMismatch: {said}: dimension mismatch: ")
    assert "8" in line and line.endswith(AFTER)
    assert not rest_server.arrived().ids()


def test_a_sample_names_its_dim(
    rest_server: ServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest_server.script(dimension=8)
    line = mismatch_line(["--sample=5", f"--uri={rest_server.uri}"], capsys)
    assert line.startswith(
        "vectordb-beam: DimensionMismatch: the sample's vectors (--dim 384): dimension mismatch"
    )


def test_run_command_names_what_the_command_gives(capsys: pytest.CaptureFixture[str]) -> None:
    def job() -> int:
        raise DimensionMismatch(
            "option dimension (4): dimension mismatch: collection vectors has dim 384, data has 4"
        )

    assert (
        run_command("vectordb-load", job, dimension_from=lambda: "the input's vectors (most of length {n})")
        == 2
    )
    assert capsys.readouterr().err.strip() == (
        "vectordb-load: DimensionMismatch: the input's vectors (most of length 4): dimension mismatch: "
        f"collection vectors has dim 384, data has 4{AFTER}"
    )
    assert run_command("vectordb-load", job, dimension_from=lambda: None) == 2  # the user's own option
    assert capsys.readouterr().err.startswith("vectordb-load: DimensionMismatch: option dimension (4): ")
