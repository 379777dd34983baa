from __future__ import annotations

import pickle

import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.client import resolve_options
from vectordb.connector.options import parse_uri

URI = "pinecone+grpc://127.0.0.1:5081"


def test_strings_are_converted_as_spark_sends_them() -> None:
    opts = resolve_options(
        {"uri": URI, "batch_size": "50", "max_concurrency": "8", "timeout_s": "2.5", "create": "true"}
    )
    assert (opts.batch_size, opts.max_concurrency, opts.timeout_s, opts.create) == (50, 8, 2.5, True)


def test_lists_accept_comma_separated_strings() -> None:
    opts = resolve_options({"uri": URI, "id_from": "a, b", "metadata_columns": "x,y"})
    assert opts.id_from == ["a", "b"] and opts.metadata_columns == ["x", "y"]
    assert resolve_options({"uri": URI, "metadata_columns": "*"}).metadata_columns is None


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"bach_size": "10"}, "unknown option 'bach_size'"),
        ({"batch_size": "0"}, "option batch_size"),
        ({"batch_size": "many"}, "option batch_size"),
        ({"max_concurrency": "65"}, "option max_concurrency"),
        ({"on_error": "ignore"}, "option on_error"),
        ({"on_error": "dead_letter"}, "dead_letter_path"),
        (
            {"dead_letter_path": "/tmp/dl"},
            'dead_letter_path is written only with on_error="dead_letter" .*"fail"',
        ),
        ({"on_error": "report", "dead_letter_path": "/tmp/dl"}, r'\(on_error is "report"\)'),
        ({"timeout_s": "-1"}, "option timeout_s"),
        ({"namespace": "a", "namespace_column": "ns"}, "namespace_column"),
    ],
)
def test_bad_options_name_the_option(raw: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        resolve_options({"uri": URI, **raw})


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("", "option uri is required"),
        ("my-index.pinecone.io", "is not SCHEME://"),
        ("nosuchdb://host", "unknown database scheme 'nosuchdb'"),
        ("pinecone+grpc://host:notaport", "bad port"),
        ("pinecone+carrier-pigeon://host", "no transport"),
        ("pinecone+grpc://index.pinecone.io/extra", "names the index by its host"),
        ("pinecone://index.pinecone.io", "api_key"),
    ],
)
def test_malformed_uris_are_config_errors(uri: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        connect(uri)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"batchsize": "10"}, "unknown option 'batchsize' (did you mean 'batch_size'?)"),
        ({"namspace": "docs"}, "unknown option 'namspace' (did you mean 'namespace'?)"),
        ({"MAX_CONCURENCY": "4"}, "(did you mean 'max_concurrency'?)"),
        ({"frobnicate": "1"}, "unknown option 'frobnicate'"),
    ],
)
def test_a_misspelt_option_names_the_nearest_known_one(raw: dict, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_options({"uri": URI, **raw})
    assert says in str(info.value)
    if "did you mean" not in says:
        assert "did you mean" not in str(info.value)  # nothing near: no guess


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("pinecon://host", "unknown database scheme 'pinecon' (did you mean 'pinecone'?)"),
        ("milvus+lyte://./x.db", "(did you mean 'milvus+lite'?)"),
        ("qdrnt://127.0.0.1:1", "(did you mean 'qdrant'?)"),
    ],
)
def test_a_misspelt_scheme_names_the_nearest_known_one(uri: str, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        connect(uri)
    assert says in str(info.value)


def test_api_key_env_is_read_where_the_key_is_needed_not_where_options_are_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VDB_TEST_KEY", raising=False)
    opts = resolve_options({"uri": URI, "api_key_env": "VDB_TEST_KEY"})
    assert opts.api_key is None
    with pytest.raises(
        ConfigError, match="option api_key_env: environment variable 'VDB_TEST_KEY' is not set on"
    ):
        opts.credential()
    monkeypatch.setenv("VDB_TEST_KEY", "s3cr3t-from-env")
    assert opts.credential() == "s3cr3t-from-env"
    assert b"s3cr3t" not in pickle.dumps(opts)  # what travels to workers names the variable only
    held = opts.with_credential()
    assert held.api_key == "s3cr3t-from-env" and held.credential() == "s3cr3t-from-env"
    assert "s3cr3t" not in repr(held) and "s3cr3t" not in repr(opts)
    with pytest.raises(ConfigError, match="options api_key and api_key_env exclude each other"):
        resolve_options({"uri": URI, "api_key": "given", "api_key_env": "VDB_TEST_KEY"})


def test_api_key_never_in_repr_pickle_roundtrip_or_errors() -> None:
    opts = resolve_options({"uri": URI, "api_key": "s3cr3t-key", "batch_size": "7"})
    assert "s3cr3t" not in repr(opts) and "s3cr3t" not in str(opts)
    assert "api_key=***" in repr(opts)
    assert pickle.loads(pickle.dumps(opts)).api_key == "s3cr3t-key"
    with pytest.raises(ConfigError) as info:
        resolve_options({"uri": URI, "api_key": "s3cr3t-key", "batch_size": "x"})
    assert "s3cr3t" not in str(info.value)
    with connect(URI, api_key="s3cr3t-key") as client:
        assert "s3cr3t" not in repr(client) and "s3cr3t" not in repr(client.engine.transport)


def test_batch_size_above_the_database_limit_is_refused() -> None:
    with pytest.raises(ConfigError, match="batch_size: pinecone takes at most 1000"):
        connect(URI, batch_size=5000)


def test_parse_uri_splits_scheme_and_transport() -> None:
    uri = parse_uri("qdrant+grpc://db.example:6334/docs?x=1")
    assert (uri.database, uri.transport, uri.host, uri.port, uri.path, uri.query) == (
        "qdrant",
        "grpc",
        "db.example",
        6334,
        "docs",
        {"x": "1"},
    )


def test_passwords_in_uris_are_masked_in_reprs() -> None:
    from vectordb.connector.options import without_password

    assert (
        without_password("postgresql://loader:hunter2@db:5432/x?table=t")
        == "postgresql://loader:***@db:5432/x?table=t"
    )
    assert (
        without_password("postgresql://db/x?password=hunter2&table=t")
        == "postgresql://db/x?password=***&table=t"
    )
    assert without_password("pinecone://idx.pinecone.io") == "pinecone://idx.pinecone.io"
    opts = resolve_options({"uri": "pinecone+grpc://u:hunter2@127.0.0.1:1"})
    assert "hunter2" not in repr(opts)


@pytest.mark.parametrize("uri", ["./vectors.db", "milvus+lite://./vectors.db", "vectors.db"])
def test_a_file_path_is_the_embedded_default_with_an_absolute_path(uri: str) -> None:
    import os

    opts = resolve_options({"uri": uri, "collection": "docs"})
    assert opts.uri == "milvus+lite://" + os.path.abspath("vectors.db")


def test_a_namespace_holding_a_lone_surrogate_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="option namespace: holds a lone surrogate"):
        connect("./never.db", namespace="ns\udcff")
    with (
        connect("pinecone://127.0.0.1:1", api_key="k") as client,
        pytest.raises(ConfigError, match="namespace: holds a lone surrogate"),
    ):
        client.clear("ns\udcff")
