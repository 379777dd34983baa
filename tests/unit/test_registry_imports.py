"""A backend whose import fails is a ``MissingExtra`` only when a third-party package its install hint
brings is missing; the connector's own module failing (a broken or half-installed module) is raised as
it is, with its trace, since the pip advice could not fix it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from vectordb.connector.backends import registry
from vectordb.connector.backends.registry import backend_class, register_backend
from vectordb.connector.errors import MissingExtra

PINECONE = "vectordb.connector.backends.pinecone"


def _fresh(monkeypatch: pytest.MonkeyPatch, blocked: str) -> None:
    """Import the pinecone backend anew, with ``blocked`` failing to import (``None`` in sys.modules)."""
    monkeypatch.delitem(sys.modules, PINECONE, raising=False)
    monkeypatch.setitem(sys.modules, blocked, None)


def test_a_broken_module_of_the_connector_is_raised_with_its_name_not_as_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fresh(monkeypatch, "vectordb.connector.backends.integers")
    with pytest.raises(ImportError) as raised:
        backend_class("pinecone")
    assert not isinstance(raised.value, MissingExtra)
    assert raised.value.name == "vectordb.connector.backends.integers"
    assert "pip install" not in str(raised.value)


def test_a_missing_third_party_package_is_a_missing_extra_with_the_pip_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fresh(monkeypatch, "orjson")
    with pytest.raises(MissingExtra, match=r"\(orjson\): pip install 'vectordb-connector\[grpc\]'"):
        backend_class("pinecone")


def test_a_third_party_backend_missing_its_package_is_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "f8_thirdparty_backend.py").write_text(
        textwrap.dedent(
            """
            import f8_no_such_package_anywhere

            class Backend: ...
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_THIRD_PARTY", dict(registry._THIRD_PARTY))
    register_backend("f8db", "f8_thirdparty_backend:Backend", "pip install f8db-extra")
    with pytest.raises(MissingExtra, match=r"\(f8_no_such_package_anywhere\): pip install f8db-extra"):
        backend_class("f8db")
