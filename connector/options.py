"""The option contract shared by every database and both engines: strings in, a Struct out.

Options arrive as strings from Spark (keys lower-cased) and as Python values from Beam and
``connect()``. ``parse_options`` validates them once, on the driver, and raises one
``ConfigError`` naming the option at fault; the parsed Struct is what travels to executors.
Each backend extends ``BackendOptions`` with its own fields. Credentials are masked in
``repr`` and never appear in error messages. Only PostgreSQL reads credentials from its URI: elsewhere a
``user:password@``, a user alone, or a query parameter whose name says it holds one (``api_key=``,
``token=``) is refused by ``parse_uri``, pointing to option ``api_key``.

Strings are read by the field's type, alike in every engine: a value for a number, a boolean or a
choice is trimmed (Spark passes ``" 10 "`` as it was typed), a choice and a boolean case-folded
(``"Cosine"``, ``"TRUE"``); free text (names, paths, keys) is taken as it is, except ``uri``, trimmed.
A refused value is quoted, unless the option holds a credential, beside what the option accepts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self, TypeVar
from urllib.parse import parse_qsl, urlsplit

import msgspec
import msgspec.inspect as mi

from .errors import ConfigError
from .keys import SECRET_PARAMETER, USERINFO_SCHEMES, key_from, looks_like_variable, without_password
from .limits import MAX_EMBED_INPUTS
from .redaction import caught, returned

if TYPE_CHECKING:
    from .embedding.options import EmbedOptions

__all__ = [
    "SPARK_OPTIONS",
    "BackendOptions",
    "ParsedUri",
    "collection_of",
    "convert_options",
    "is_loopback_host",
    "name_map",
    "parse_options",
    "parse_uri",
    "tls_for",
    "uri_database",
    "without_password",
]

_SECRET_FIELDS = frozenset({"api_key", "password", "token", "embed_api_key"})
# keys, sent as a header: servers trim a header's value, and a line break cannot be sent in one at all
_TRIMMED_KEYS = ("api_key", "embed_api_key")
_VARIABLE_FIELDS = frozenset({"api_key_env", "embed_api_key_env"})
# options the Spark data source takes itself (spark/options.py ``SparkOptions``; a test keeps the two
# equal): named here, where the connector's own are parsed, so that Beam and connect() say where such
# an option belongs, and a misspelt one is matched in Spark, which hands unknown keys to this parser
SPARK_OPTIONS = frozenset({"allow_overwrite", "budget_tasks", "report_path"})
# pairs that say one thing two ways: which one won would be a guess
_EXCLUSIVE = (
    ("namespace", "namespace_column"),
    ("api_key", "api_key_env"),
    ("embed_api_key", "embed_api_key_env"),
)
# the slowest rate budget taken: a slower one is a typo (1e-300), and its waits would overflow a sleep
MIN_ROWS_PER_SECOND = 0.001
MIN_BYTES_PER_SECOND = 1.0


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
    max_rows_per_second: Annotated[float, msgspec.Meta(ge=MIN_ROWS_PER_SECOND)] | None = None
    max_bytes_per_second: Annotated[float, msgspec.Meta(ge=MIN_BYTES_PER_SECOND)] | None = None
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
    embed_batch_size: Annotated[int, msgspec.Meta(ge=1, le=MAX_EMBED_INPUTS)] | None = None
    # characters of text per embedding request: a server's body or token limit, or a big batch's latency
    embed_max_batch_chars: Annotated[int, msgspec.Meta(ge=1, le=1 << 30)] | None = None
    embed_max_concurrency: Annotated[int, msgspec.Meta(ge=1, le=1024)] | None = None
    embed_dimensions: Annotated[int, msgspec.Meta(ge=1, le=65_536)] | None = None
    # the model a driver's probe reply named (DriverPlan.learn_model_dimension): every task's replies must
    # name it (or none), so a gateway's fallback at a task's first request is caught too
    embed_model_answered: str | None = None

    def __post_init__(self) -> None:
        for name in _TRIMMED_KEYS:  # a key read from a file ends in a line break (open("key.txt").read())
            key = getattr(self, name)
            if key is not None and key != key.strip():
                setattr(self, name, key.strip())
        if self.metadata_columns == ["*"]:
            self.metadata_columns = None
        if self.on_error == "dead_letter" and not self.dead_letter_path:
            raise ConfigError('option on_error="dead_letter" needs option dead_letter_path')
        if self.dead_letter_path and self.on_error != "dead_letter":  # never written: say so, not nothing
            raise ConfigError(
                f'option dead_letter_path is written only with on_error="dead_letter" (on_error is '
                f'"{self.on_error}"): set on_error="dead_letter", or leave dead_letter_path out'
            )
        for one, other in _EXCLUSIVE:
            if getattr(self, one) is not None and getattr(self, other) is not None:
                raise ConfigError(f"options {one} and {other} exclude each other: give one")
        if self.namespace is not None:
            check_text("option namespace", self.namespace)
        _check_column_names(self)
        if self.op_column is not None:
            self._check_op_column(self.op_column)
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

    def _check_op_column(self, op: str) -> None:
        """A row's op is a column of its own: read as an id, a namespace or a text too, a value such as
        ``delete`` would be both, and rows of namespace (or id) ``delete`` would be deleted."""
        taken: dict[str, list[str | None]] = {
            "id_column": [] if self.id_from else [self.id_column],
            "id_from": list(self.id_from or ()),
            "namespace_column": [self.namespace_column],
            "text_column": [self.text_column],
        }
        for option, columns in taken.items():
            if op in columns:
                raise ConfigError(
                    f"options op_column and {option} both name column {op!r}: the op (upsert or delete) "
                    "needs a column of its own"
                )

    def _check_embedding(self) -> None:
        """The embedding options' rules across fields."""
        from .embedding.options import WRITER_OPTIONS

        given = [name for name in (*WRITER_OPTIONS, *_EMBED_FIELDS) if getattr(self, name) is not None]
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
        return msgspec.structs.replace(self, api_key=self.credential(), api_key_env=None)

    def __repr__(self) -> str:
        fields = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is None or (name in self._defaults() and value == self._defaults()[name]):
                continue
            if name in _SECRET_FIELDS or (name in _VARIABLE_FIELDS and not looks_like_variable(value)):
                value = "***"  # a key pasted where its variable's name goes is a key
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
E = TypeVar("E", bound=BaseException)
StructT = TypeVar("StructT", bound=msgspec.Struct)

_LIST_FIELDS = ("id_from", "metadata_columns")
_MAP_FIELDS = ("vector_columns", "multi_vector_columns", "vector_dimensions")  # "name:value,name:value"
_FALSE = {"false", "0", "no", "off"}
_TRUE = {"true", "1", "yes", "on"}


def parse_options(raw: Mapping[str, Any], cls: type[OptionsT]) -> OptionsT:
    """Validate ``raw`` (strings or values) into ``cls``; one ``ConfigError`` names the option at fault.

    The error is raised from a frame that no longer holds ``raw``, with the frames it passed dropped:
    ``raw`` holds keys in clear, and tools print a traceback's locals (``redaction``)."""
    outcome = caught(_parse, raw, cls)
    del raw
    try:
        return returned(outcome)
    finally:
        del outcome  # an error held by a frame it passed is a cycle (``redaction.returned``)


def _parse(raw: Mapping[str, Any], cls: type[OptionsT]) -> OptionsT:
    if raw.get("uri") is None:
        raise ConfigError("option uri is required, e.g. uri='pinecone+grpc://my-index-abc.svc.pinecone.io'")
    named = [key for key in ("vector_columns", "multi_vector_columns") if raw.get(key) is not None]
    if named and raw.get("vector_column") is not None:
        # the single vector has no name: which name would it go under, beside the named ones?
        raise ConfigError(
            f"options vector_column and {named[0]} exclude each other: with several vectors a row every "
            f"dense vector is named, e.g. vector_columns='default:{raw['vector_column']},title:title_vec'"
        )
    return _convert(raw, cls)


def convert_options(raw: Mapping[str, Any], cls: type[StructT]) -> StructT:
    """Options given as strings or values into the Struct ``cls``: the one parser, for the connector's
    options and an adapter's own. A string is read by its field's type (the module docstring);
    comma-separated strings become lists where the field is one; ``None`` is "not given". A
    ``ConfigError`` is raised as ``parse_options`` raises it, from a frame without ``raw``."""
    outcome = caught(_convert, raw, cls)
    del raw
    try:
        return returned(outcome)
    finally:
        del outcome


def _convert(raw: Mapping[str, Any], cls: type[StructT]) -> StructT:
    kinds = _field_types(cls)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue
        values[key] = _read_text(key, value, kinds.get(key)) if isinstance(value, str) else value
    try:
        return msgspec.convert(values, cls, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid options: {_explain(str(exc), raw, cls)}") from None


def _read_text(key: str, text: str, kind: mi.Type | None) -> Any:
    """``text`` as the field of type ``kind`` reads it: free text as it is, any other value trimmed,
    booleans and choices case-folded."""
    if key in _LIST_FIELDS:
        return [part.strip() for part in text.split(",") if part.strip()]
    if key in _MAP_FIELDS:
        return name_map(key, text)
    if key == "uri":
        return text.strip()  # a pasted URI's trailing space would become part of its host
    if kind is None or isinstance(kind, mi.StrType):  # names, paths, keys: a space may be meant
        return text
    folded = text.strip().lower()
    if isinstance(kind, mi.BoolType) and folded in _TRUE | _FALSE:
        return folded in _TRUE
    if isinstance(kind, mi.LiteralType):
        return {str(choice).lower(): choice for choice in kind.values}.get(folded, text.strip())
    return text.strip()


@functools.cache
def _field_types(cls: type[msgspec.Struct]) -> dict[str, mi.Type]:
    """Each field's type, an optional one as the type it holds when given."""
    kinds: dict[str, mi.Type] = {}
    for field in mi.type_info(cls).fields:  # type: ignore[attr-defined]
        kind = field.type
        if isinstance(kind, mi.UnionType):
            given = [k for k in kind.types if not isinstance(k, mi.NoneType)]
            kind = given[0] if len(given) == 1 else kind
        kinds[field.name] = kind
    return kinds


def _explain(message: str, raw: Mapping[str, Any], cls: type[msgspec.Struct]) -> str:
    """msgspec's message, reworded to name the option, quote the value given (never a credential's) and
    say what the option accepts; ``"Expected `int | null`, got `str`"`` tells a Spark user nothing."""
    if message.startswith("Object contains unknown field"):
        return _unknown(message.split("`")[1] if "`" in message else message, cls)
    text, at, where = message.partition(" - at `$.")
    if not at:
        return message  # a rule across options (``__post_init__``), worded where it is kept
    path = where.rstrip("`")
    name = path.split("[")[0]
    kind = _field_types(cls).get(name)
    value = raw.get(name)
    if path != name and isinstance(kind, mi.DictType | mi.ListType):  # one of its items is at fault
        item = kind.value_type if isinstance(kind, mi.DictType) else kind.item_type
        accepted = _accepted(item)
        if accepted is not None:
            return f"option {name}: {_shown(name, value)} holds a value that is not {accepted}"
    accepted = _accepted(kind) if path == name and kind is not None else None
    if accepted is None:
        return f"option {name}: {text}"
    near = ""
    if isinstance(kind, mi.LiteralType) and isinstance(value, str) and not _is_secret(name):
        near = did_you_mean(value.strip(), [str(choice) for choice in kind.values])
    return f"option {name}: {_shown(name, value)} is not {accepted}{near}"


def _unknown(name: str, cls: type[msgspec.Struct]) -> str:
    """An option ``cls`` does not have: where it belongs if it is Spark's, else the nearest known name."""
    if name in SPARK_OPTIONS:
        return (
            f"option {name} is an option of the Spark data source (df.write.format('vectordb')); the Beam "
            "sink and connect() do not take it"
        )
    near = _nearest(name, [*cls.__struct_fields__, *SPARK_OPTIONS])
    if near is None:
        return f"unknown option {name!r}"
    spark = ", a Spark option" if near in SPARK_OPTIONS and near not in cls.__struct_fields__ else ""
    return f"unknown option {name!r} (did you mean {near!r}{spark}?)"


def _accepted(kind: mi.Type) -> str | None:
    """What an option of type ``kind`` takes, in words; ``None`` where msgspec's own words say it."""
    if isinstance(kind, mi.BoolType):
        return "true or false (or yes/no, on/off, 1/0)"
    if isinstance(kind, mi.LiteralType):
        return "one of " + ", ".join(repr(choice) for choice in kind.values)
    if isinstance(kind, mi.IntType):
        return "an integer" + _bounds(kind)
    if isinstance(kind, mi.FloatType):
        return "a number" + _bounds(kind)
    if isinstance(kind, mi.StrType):
        return "a string"
    if isinstance(kind, mi.ListType):
        return "a list of names (or one string of them, comma-separated)"
    if isinstance(kind, mi.DictType):
        return "name:value pairs (e.g. 'title:title_vec,body:body_vec', or a dict)"
    return None


def _bounds(kind: mi.IntType | mi.FloatType) -> str:
    """`` from 1 to 64``, `` > 0 and <= 3600``: a number type's bounds."""
    if kind.ge is not None and kind.le is not None:
        return f" from {_number(kind.ge)} to {_number(kind.le)}"
    words = ((">=", kind.ge), (">", kind.gt), ("<", kind.lt), ("<=", kind.le))
    parts = [f"{word} {_number(bound)}" for word, bound in words if bound is not None]
    return " " + " and ".join(parts) if parts else ""


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _shown(name: str, value: Any) -> str:
    """``value`` as an error quotes it: never a credential's, a URI's without its password, and short."""
    if _is_secret(name):
        return "the value given"
    if name in ("uri", "embed_url") and isinstance(value, str):
        value = without_password(value)
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:76]}...{text[-1]}"


def _is_secret(name: str) -> bool:
    return name in _SECRET_FIELDS or bool(SECRET_PARAMETER.search(name))


def name_map(option: str, text: str) -> dict[str, str]:
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


def _check_column_names(options: BackendOptions) -> None:
    """Every column option names a column: an empty name matches none, so every row would fail alike
    ("null vector"); an id_from column given twice adds nothing to the id but looks like a typo."""
    for option in _COLUMN_FIELDS:
        if getattr(options, option) == "":
            raise ConfigError(f"option {option}: a column name cannot be empty")
    for option in ("id_from", "metadata_columns"):
        listed = getattr(options, option) or ()
        if "" in listed:
            raise ConfigError(f"option {option}: a column name cannot be empty")
        seen: set[str] = set()
        for column in listed:
            if column in seen and option == "id_from":
                raise ConfigError(f"option id_from: column {column!r} is given twice")
            seen.add(column)


_COLUMN_FIELDS = (
    "id_column",
    "vector_column",
    "sparse_column",
    "namespace_column",
    "op_column",
    "text_column",
)


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
    near = _nearest(name, known)
    return f" (did you mean {near!r}?)" if near is not None else ""


def _nearest(name: str, known: Iterable[str]) -> str | None:
    import difflib  # only on an error: the import of the connector stays cheap

    match = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
    return match[0] if match else None


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
    query = dict(parse_qsl(parts.query))
    if database not in USERINFO_SCHEMES:  # the others take credentials in api_key
        _refuse_credentials(
            database, "@" in parts.netloc, [name for name in query if SECRET_PARAMETER.search(name)]
        )
    return ParsedUri(
        scheme=scheme,
        database=database,
        transport=transport or None,
        host=parts.hostname or "",
        port=port,
        path=parts.path.strip("/"),
        query=query,
    )


def _refuse_credentials(database: str, userinfo: bool, secret_parameters: list[str]) -> None:
    """A credential in a URI that reads none (``pinecone://user:KEY@host``, ``qdrant://KEY@host``,
    ``milvus://root:Milvus@host``, ``?api_key=``) would be dropped without a word, every request then
    refused for a missing key: a ``ConfigError`` naming option uri and where the credential goes, never
    quoting it."""
    where = (
        "give the token in option api_key (or api_key_env), a user and password as one token 'user:password'"
    )
    if userinfo:
        raise ConfigError(f"option uri: {database} takes no user:password@ in the URI; {where}")
    if secret_parameters:
        raise ConfigError(
            f"option uri: {database} reads no credential from the URI's query ({', '.join(secret_parameters)}); "
            f"{where}"
        )


def collection_of(
    from_uri: str | None, option: str | None, *, in_uri: str = "collection", same: Callable[[str], str] = str
) -> str:
    """The target's collection: the URI's, or option ``collection`` where the URI names none (``""``: neither
    does). Both naming different ones (compared as ``same`` spells them: Weaviate capitalises a class) is a
    ``ConfigError`` naming both: writing to either would be a guess. ``in_uri``: what the URI calls it."""
    if from_uri and option and same(from_uri) != same(option):
        raise ConfigError(
            f"option collection {option!r} disagrees with the URI's {in_uri} {from_uri!r}: give one"
        )
    return from_uri or option or ""


def uri_database(uri: str) -> str:
    """The database part of a URI's scheme (``pinecone`` of ``pinecone+grpc://…``), for the registry."""
    if "://" not in uri:
        raise ConfigError(
            f"option uri: {without_password(uri)!r} is not SCHEME://host[:port][/collection] "
            "nor a path for the embedded database (./vectors.db)"
        )
    return uri.split("://", 1)[0].strip().lower().partition("+")[0]
