"""The option contract shared by every database and both engines: strings in, a Struct out.

Options arrive as strings from Spark (keys lower-cased) and as Python values from Beam and
``connect()``. ``parse_options`` validates them once, on the driver, and raises one
``ConfigError`` naming the option at fault; the parsed Struct is what travels to executors.
Each backend extends ``BackendOptions`` with its own fields. Credentials are masked in
``repr`` and never appear in error messages (msgspec names the field, not the value).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self, TypeVar
from urllib.parse import parse_qsl, urlsplit

import msgspec

from .errors import ConfigError
from .keys import key_from, without_password

if TYPE_CHECKING:
    from .embedding.options import EmbedOptions

__all__ = [
    "BackendOptions",
    "ParsedUri",
    "convert_options",
    "is_loopback_host",
    "parse_options",
    "parse_uri",
    "tls_for",
    "uri_database",
    "without_password",
]

_SECRET_FIELDS = frozenset({"api_key", "password", "token", "embed_api_key"})


class BackendOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Options every backend understands (the README's options table). ``None``: the backend's default."""

    uri: str
    collection: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    namespace: str | None = None
    namespace_column: str | None = None
    op_column: str | None = None  # each row's op: upsert or delete (rows/ops.py); None: every row upserts
    id_column: str = "id"
    id_from: list[str] | None = None
    vector_column: str = "values"
    # several vectors a row (named dense vectors, multi-vectors): name -> column; given as "name:column,..."
    vector_columns: dict[str, str] | None = None
    multi_vector_columns: dict[str, str] | None = None
    vector_dimensions: dict[str, Annotated[int, msgspec.Meta(ge=1, le=65_536)]] | None = None
    sparse_column: str | None = None
    metadata_columns: list[str] | None = None  # None: every other column; ["*"] means the same
    dimension: Annotated[int, msgspec.Meta(ge=1, le=65_536)] | None = None
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=100_000)] | None = None
    max_batch_bytes: Annotated[int, msgspec.Meta(ge=1024, le=1 << 30)] | None = None
    max_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4
    # per request, the embedding stage's included (embed_options)
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=50)] = 5
    timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 30.0
    max_rows_per_second: Annotated[float, msgspec.Meta(gt=0)] | None = None
    max_bytes_per_second: Annotated[float, msgspec.Meta(gt=0)] | None = None
    # requests per row sent; the embedding stage has a budget of its own, at this rate per text sent
    isolation_budget: Annotated[float, msgspec.Meta(ge=0, le=100)] = 1.0
    on_error: Literal["fail", "report", "dead_letter"] = "fail"
    dead_letter_path: str | None = None
    create: bool = False
    metric: Literal["cosine", "euclidean", "dotproduct"] = "cosine"
    tls: bool | None = None  # None: on, except for loopback hosts
    # the embedding stage (connector/embedding/stage.py): rows with text and no vector get the model's
    text_column: str | None = None
    embed_url: str | None = None
    embed_model: str | None = None
    embed_api_key: str | None = None
    embed_api_key_env: str | None = None
    embed_batch_size: Annotated[int, msgspec.Meta(ge=1, le=100_000)] | None = None
    embed_max_concurrency: Annotated[int, msgspec.Meta(ge=1, le=1024)] | None = None
    embed_dimensions: Annotated[int, msgspec.Meta(ge=1, le=65_536)] | None = None

    def __post_init__(self) -> None:
        if self.metadata_columns == ["*"]:
            self.metadata_columns = None
        if self.on_error == "dead_letter" and not self.dead_letter_path:
            raise ConfigError('option on_error="dead_letter" needs option dead_letter_path')
        if self.dead_letter_path and self.on_error != "dead_letter":  # never written: say so, not nothing
            raise ConfigError(
                f'option dead_letter_path is written only with on_error="dead_letter" (on_error is '
                f'"{self.on_error}"): set on_error="dead_letter", or leave dead_letter_path out'
            )
        if self.namespace is not None and self.namespace_column is not None:
            raise ConfigError("options namespace and namespace_column exclude each other: give one")
        if self.namespace is not None:
            check_text("option namespace", self.namespace)
        _check_vector_names(self)
        if any(getattr(self, name) is not None for name in _EMBED_FIELDS):
            self._check_embedding()
            if self.dimension is None:
                self.dimension = self.embed_dimensions  # the write's dimension is the model's

    def credential(self) -> str | None:
        """``api_key``, else this process's environment variable ``api_key_env``.

        Read where a connection opens, not where options are parsed: options built from
        ``api_key_env`` carry the variable's name to remote workers (a pickled Beam pipeline,
        which the runner stores), never the key.
        """
        return key_from(self.api_key, self.api_key_env)

    def embed_options(self) -> EmbedOptions | None:
        """The embedding client's options of the ``embed_*`` options, ``None`` without ``embed_url``;
        a ``ConfigError`` names the writer's option at fault. The embedding requests are the write's
        requests too: they take its ``max_retries``, ``timeout_s`` and ``isolation_budget``."""
        if self.embed_url is None:
            return None
        from .embedding.options import SHARED_OPTIONS, WRITER_OPTIONS, parse_embed_options  # numpy, threads

        raw = {field: getattr(self, option) for option, field in WRITER_OPTIONS.items()}
        raw |= {name: getattr(self, name) for name in SHARED_OPTIONS}
        return parse_embed_options(raw, prefix="embed_")

    def _check_embedding(self) -> None:
        """The embedding options' rules across fields."""
        from .embedding.options import WRITER_OPTIONS

        given = [name for name in (*WRITER_OPTIONS, "text_column") if getattr(self, name) is not None]
        if self.embed_url is None:
            raise ConfigError(
                f"option {given[0]} needs option embed_url (and embed_model, text_column): the embedding "
                "endpoint that turns text into vectors"
            )
        for required in ("embed_model", "text_column"):
            if getattr(self, required) is None:
                raise ConfigError(f"option embed_url needs option {required}")
        text = self.text_column
        taken = {"vector_column": self.vector_column, "id_column": None if self.id_from else self.id_column}
        for option, column in taken.items():
            if column == text:
                raise ConfigError(f"option text_column: {text!r} is also option {option}")
        if self.embed_dimensions is not None and self.dimension not in (None, self.embed_dimensions):
            raise ConfigError(
                f"options embed_dimensions ({self.embed_dimensions}) and dimension ({self.dimension}) "
                "differ: the model's vectors are what is written"
            )
        self.embed_options()

    def with_credential(self) -> Self:
        """A copy holding the key itself, for workers that should not need the variable."""
        return msgspec.structs.replace(self, api_key=self.credential())

    def __repr__(self) -> str:
        fields = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is None or (name in self._defaults() and value == self._defaults()[name]):
                continue
            if name in _SECRET_FIELDS:
                value = "***"
            elif name in ("uri", "embed_url"):
                value = without_password(value)
            fields.append(f"{name}={value if value == '***' else repr(value)}")
        return f"{type(self).__name__}({', '.join(fields)})"

    @classmethod
    def _defaults(cls) -> dict[str, Any]:
        names = cls.__struct_fields__
        defaults = cls.__struct_defaults__
        return dict(zip(names[len(names) - len(defaults) :], defaults, strict=True))

    __str__ = __repr__


_EMBED_FIELDS = tuple(
    name for name in BackendOptions.__struct_fields__ if name.startswith(("embed_", "text_"))
)

OptionsT = TypeVar("OptionsT", bound=BackendOptions)
StructT = TypeVar("StructT", bound=msgspec.Struct)

_LIST_FIELDS = ("id_from", "metadata_columns")
_MAP_FIELDS = ("vector_columns", "multi_vector_columns", "vector_dimensions")  # "name:value,name:value"
_FALSE = {"false", "0", "no", "off"}
_TRUE = {"true", "1", "yes", "on"}


def parse_options(raw: Mapping[str, Any], cls: type[OptionsT]) -> OptionsT:
    """Validate ``raw`` (strings or values) into ``cls``; one ``ConfigError`` names the option at fault."""
    if raw.get("uri") is None:
        raise ConfigError("option uri is required, e.g. uri='pinecone+grpc://my-index-abc.svc.pinecone.io'")
    named = [key for key in ("vector_columns", "multi_vector_columns") if raw.get(key) is not None]
    if named and raw.get("vector_column") is not None:
        # the single vector has no name: which name would it go under, beside the named ones?
        raise ConfigError(
            f"options vector_column and {named[0]} exclude each other: with several vectors a row every "
            f"dense vector is named, e.g. vector_columns='default:{raw['vector_column']},title:title_vec'"
        )
    return convert_options(raw, cls)


def convert_options(raw: Mapping[str, Any], cls: type[StructT]) -> StructT:
    """Options given as strings or values into the Struct ``cls``: the one parser, for the connector's
    options and an adapter's own. ``"true"``/``"false"`` (and kin) become booleans where the field is one,
    comma-separated strings lists where it is a list; ``None`` is "not given"."""
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue
        if key in _LIST_FIELDS and isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        elif key in _MAP_FIELDS and isinstance(value, str):
            value = _name_map(key, value)
        elif isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE and _is_bool_field(cls, key):
            value = value.strip().lower() in _TRUE
        values[key] = value
    try:
        return msgspec.convert(values, cls, strict=False)
    except msgspec.ValidationError as exc:
        message = _name_option(str(exc))
        if message.startswith("unknown option "):
            message += did_you_mean(message.split("'")[1], cls.__struct_fields__)
        raise ConfigError(f"invalid options: {message}") from None


def _name_map(option: str, text: str) -> dict[str, str]:
    """``"title:title_vec, body:body_vec"`` as ``{"title": "title_vec", "body": "body_vec"}``; a bare
    ``"body_vec"`` is named after its column. A name given twice is a ``ConfigError``."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = (s.strip() for s in part.partition(":"))
        if not sep:
            name = value = part
        if not name or not value:
            raise ConfigError(f"option {option}: {part!r} is not name:value (e.g. 'title:title_vec')")
        if name in out:
            raise ConfigError(f"option {option}: name {name!r} is given twice")
        out[name] = value
    return out


def check_text(what: str, text: str) -> None:
    """A ``ConfigError`` naming ``what`` if ``text`` cannot travel as UTF-8 (it holds a lone surrogate)."""
    if not all_utf8([text]):
        raise ConfigError(f"{what}: holds a lone surrogate, which UTF-8 cannot carry")


def all_utf8(texts: list[str]) -> bool:
    """Whether every text can be sent (UTF-8 takes any text but one holding a lone surrogate, which a
    Python string decoded with ``surrogateescape`` may): one pass in C for all of them. The one rule for
    options (``check_text``) and rows (``rows.checks``)."""
    joined = "".join(texts)
    if joined.isascii():
        return True
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_vector_names(options: BackendOptions) -> None:
    """Several vectors a row: names and columns each once, and no option that says otherwise about them."""
    dense, multi = options.vector_columns, options.multi_vector_columns
    if options.vector_dimensions is not None and dense is None and multi is None:
        raise ConfigError(
            "option vector_dimensions: names dimensions of vector_columns or multi_vector_columns; "
            "neither is given (a single vector's is option dimension)"
        )
    if dense is None and multi is None:
        return
    owner: dict[str, str] = {}  # column -> the option and name that read it
    names: dict[str, str] = {}  # name -> the option that gives it
    for option, mapping in (("vector_columns", dense), ("multi_vector_columns", multi)):
        if mapping is not None and not mapping:
            raise ConfigError(f"option {option}: no name:column given")
        for name, column in (mapping or {}).items():
            if not name or not column:
                raise ConfigError(f"option {option}: a name and its column cannot be empty")
            if name in names:
                raise ConfigError(f"option {option}: name {name!r} is also given by option {names[name]}")
            if column in owner:
                raise ConfigError(f"option {option}: column {column!r} is read twice ({owner[column]} too)")
            names[name] = option
            owner[column] = f"{option} name {name!r}"
    others: dict[str, str | None] = {
        "id_column": None if options.id_from else options.id_column,
        "sparse_column": options.sparse_column,
        "namespace_column": options.namespace_column,
        "op_column": options.op_column,
        "text_column": options.text_column,
    }
    for other, used in others.items():
        if used is not None and used in owner:
            raise ConfigError(f"option {other}: column {used!r} is also a vector ({owner[used]})")
    for listed in options.metadata_columns or ():
        if listed in owner:
            raise ConfigError(f"option metadata_columns: column {listed!r} is a vector ({owner[listed]})")
    if options.dimension is not None:
        raise ConfigError(
            "option dimension: is the single vector's; with vector_columns or multi_vector_columns give "
            "each name's with option vector_dimensions (e.g. 'title:768,colbert:128')"
        )
    if options.embed_url is not None:
        raise ConfigError(
            "option embed_url: the embedding stage fills option vector_column, not named vectors "
            "(vector_columns, multi_vector_columns)"
        )
    for name in options.vector_dimensions or {}:
        if name not in names:
            raise ConfigError(
                f"option vector_dimensions: no vector is named {name!r}{did_you_mean(name, names)}"
            )


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the known name nearest to a misspelt one, or ``""``."""
    import difflib  # only on an error: the import of the connector stays cheap

    match = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _is_bool_field(cls: type[msgspec.Struct], name: str) -> bool:
    for klass in cls.__mro__:
        field_type = getattr(klass, "__annotations__", {}).get(name)
        if field_type is not None:
            return "bool" in str(field_type)
    return False


def _name_option(message: str) -> str:
    """Turn msgspec's "... - at `$.batch_size`" into "option batch_size: ..."."""
    if " - at `$." in message:
        text, _, where = message.partition(" - at `$.")
        return f"option {where.rstrip('`').split('[')[0]}: {text}"
    if message.startswith("Object contains unknown field"):
        name = message.split("`")[1] if "`" in message else message
        return f"unknown option {name!r}"
    return message


class ParsedUri(msgspec.Struct, frozen=True, kw_only=True):
    """``scheme://host[:port][/path][?query]``, split; the scheme is ``database[+transport]``."""

    scheme: str
    database: str
    transport: str | None
    host: str
    port: int | None
    path: str
    query: dict[str, str]

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    def tls(self, option: bool | None) -> bool:
        return tls_for(self.host, option)


def tls_for(host: str, option: bool | None) -> bool:
    """The one TLS rule: option ``tls`` when given, else on for every host off this machine."""
    return option if option is not None else not is_loopback_host(host)


def is_loopback_host(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def parse_uri(uri: str) -> ParsedUri:
    """Split ``uri``; a malformed URI is a ``ConfigError`` that quotes it, any password shown as ``***``."""
    if "://" not in uri:
        raise ConfigError(f"option uri: {without_password(uri)!r} is not SCHEME://host[:port][/collection]")
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    database, _, transport = scheme.partition("+")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"option uri: bad port in {without_password(uri)!r}") from None
    if not database:
        raise ConfigError(f"option uri: no scheme in {without_password(uri)!r}")
    return ParsedUri(
        scheme=scheme,
        database=database,
        transport=transport or None,
        host=parts.hostname or "",
        port=port,
        path=parts.path.strip("/"),
        query=dict(parse_qsl(parts.query)),
    )


def uri_database(uri: str) -> str:
    """The database part of a URI's scheme (``pinecone`` of ``pinecone+grpc://…``), for the registry."""
    if "://" not in uri:
        raise ConfigError(
            f"option uri: {without_password(uri)!r} is not SCHEME://host[:port][/collection] "
            "nor a path for the embedded database (./vectors.db)"
        )
    return uri.split("://", 1)[0].lower().partition("+")[0]
