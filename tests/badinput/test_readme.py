"""The README's bad-input table is the catalogue's own rendering."""

from __future__ import annotations

import re
from pathlib import Path

from .cases import render

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_is_the_catalogue() -> None:
    found = re.search(r"<!-- bad-input -->\n(.*?)\n<!-- /bad-input -->", README.read_text(), flags=re.S)
    assert found, "README.md has no <!-- bad-input --> block"
    assert found.group(1) == render(), (
        "README's bad-input table is stale: paste tests.badinput.cases.render()"
    )
