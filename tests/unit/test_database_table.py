"""The README's per-database table is the registry's own rendering of the backends, so the two cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

from vectordb.connector.backends.registry import backend_class, backends, database_table
from vectordb.connector.options import BackendOptions

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_is_the_generated_one() -> None:
    text = README.read_text()
    found = re.search(r"<!-- database-table -->\n(.*?)\n<!-- /database-table -->", text, flags=re.S)
    assert found, "README.md has no <!-- database-table --> block"
    assert found.group(1) == database_table(), (
        "README's database table is stale: replace it with `python -m vectordb.connector.backends.registry`"
    )


def test_the_table_names_every_backend_option_and_request_limit() -> None:
    table = database_table()
    shared = BackendOptions._defaults()
    for scheme in backends():
        cls = backend_class(scheme)
        row = next(line for line in table.splitlines() if line.startswith(f"| {cls.name} ("))
        assert f"`{scheme}`" in row
        assert f"| {cls.limits.default_rows} / {cls.limits.max_rows} |" in row
        for name, value in cls.options_type._defaults().items():
            assert (f"`{name}`" in row) == (name not in shared or shared[name] != value), (scheme, name)
