"""Names and the URI: the table a ``postgresql://`` URI names, and libpq's part of it (password masked)."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from ...errors import ConfigError
from ...keys import SECRET_PARAMETER, without_password
from ...options import collection_of, is_loopback_host

__all__ = ["MAX_IDENTIFIER_BYTES", "PgTarget", "TableName", "quote_ident"]

MAX_IDENTIFIER_BYTES = 63  # PostgreSQL cuts longer names (NAMEDATALEN - 1)
# libpq's sslmode values that insist on TLS (allow and prefer may connect without it)
TLS_SSLMODES = ("require", "verify-ca", "verify-full")


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class TableName:
    schema: str | None
    name: str

    @classmethod
    def parse(cls, text: str) -> TableName:
        """``TABLE`` or ``SCHEMA.TABLE``, each taken as written (split at the first dot), or either quoted
        as in SQL, for a name that holds a dot: ``"my.dotted"``, ``schema."a.b"`` (``""`` is a quote)."""
        if text.startswith('"') or '."' in text:
            schema, dot, name = _quoted_parts(text)
        else:
            schema, dot, name = text.partition(".")
        if not dot:
            schema, name = "", schema
        if not name or (dot and not schema):
            raise ConfigError(f"option collection: {text!r} is not a table name (TABLE or SCHEMA.TABLE)")
        for part, value in (("schema", schema), ("table", name)):
            if len(value.encode()) > MAX_IDENTIFIER_BYTES:
                # PostgreSQL would cut it, silently: two long names sharing a start would be one table
                raise ConfigError(
                    f"option collection: {part} name {value!r} is {len(value.encode())} bytes, longer "
                    f"than PostgreSQL's {MAX_IDENTIFIER_BYTES}: it would cut it to "
                    f"{value.encode()[:MAX_IDENTIFIER_BYTES].decode(errors='ignore')!r}"
                )
        return cls(schema or None, name)

    @property
    def sql(self) -> str:
        return (
            f"{quote_ident(self.schema)}.{quote_ident(self.name)}" if self.schema else quote_ident(self.name)
        )

    def __str__(self) -> str:
        """As written, a part that holds a dot or starts with a quote quoted: ``"my.dotted"`` reads as one name."""
        name = _shown(self.name)
        return f"{_shown(self.schema)}.{name}" if self.schema else name


def _shown(part: str) -> str:
    return quote_ident(part) if "." in part or part.startswith('"') else part


def _quoted_parts(text: str) -> tuple[str, str, str]:
    """``text`` as (schema, ".", table) or (table, "", ""), where a part may be quoted as in SQL (``"a.b"``,
    ``""`` inside for a quote) and an unquoted part runs to the next dot; ``ConfigError`` for anything else."""
    parts: list[str] = []
    i = 0
    while True:
        if text.startswith('"', i):
            end = i + 1
            while (end := text.find('"', end)) >= 0 and text.startswith('"', end + 1):
                end += 2  # "" is a quote inside the name
            if end < 0:
                raise ConfigError(f"option collection: {text!r} opens a quoted name it does not close")
            parts.append(text[i + 1 : end].replace('""', '"'))
            i = end + 1
        else:
            end = text.find(".", i)
            end = len(text) if end < 0 else end
            parts.append(text[i:end])
            i = end
        if i == len(text):
            break
        if text[i] != "." or len(parts) == 2:
            raise ConfigError(
                f"option collection: {text!r} is not a table name (TABLE or SCHEMA.TABLE, either quoted "
                'as in SQL for a name with a dot: "my.table")'
            )
        i += 1
    if len(parts) == 1:
        return parts[0], "", ""
    return parts[0], ".", parts[1]


@dataclass(frozen=True, slots=True)
class PgTarget:
    """A URI split into what libpq gets (``conninfo``) and what the connector keeps.

    The user-info runs to the last ``@`` before the host (``keys.split_password``'s reading): a generated
    password may hold an unencoded ``@``, ``/``, ``#``, ``?`` or ``:``, and libpq, which ends it at the first
    ``@`` or ``/``, would take the rest for the host or the port, look it up and quote it in its error. So
    the user and password reach libpq percent-encoded, and a ``#`` is no fragment: libpq URIs have none, so
    a ``password=`` value runs past it, and past an unencoded ``&`` up to the next item with an ``=``
    (``_query_items``)."""

    conninfo: str = field(repr=False)  # may hold the password
    table: TableName
    label: str  # the URI with the password masked
    passwords: tuple[str, ...] = field(default=(), repr=False)  # as written and decoded: blanked in errors

    @classmethod
    def parse(cls, uri: str, collection: str | None, tls: bool | None = None) -> PgTarget:
        """Split ``uri``. TLS: the URI's own ``sslmode`` (option ``tls`` saying otherwise is a ``ConfigError``);
        else option ``tls`` (``False``: off by name); else required for a host that is neither loopback nor
        a unix socket."""
        scheme, slashes, rest = uri.partition("://")
        database, _, transport = scheme.lower().partition("+")
        if not slashes or database not in ("postgresql", "postgres") or transport not in ("", "psycopg"):
            given = f", not {scheme}://" if slashes and not set("@:").intersection(scheme) else ""
            raise ConfigError(f"option uri: pgvector URIs start postgresql:// or postgres://{given}")
        user, password, rest = _userinfo(rest)
        ends = [i for i in (rest.find("/"), rest.find("?")) if i >= 0]
        netloc = rest[: min(ends)] if ends else rest
        path, _, query = rest[len(netloc) :].partition("?")
        kept: list[str] = []
        table: str | None = None
        secrets = [password, unquote(password)] if password else []
        for item in _query_items(query):
            key, equals, value = item.partition("=")
            name = unquote(key)
            if name == "table":
                table = unquote(value)
            elif name == "password" and equals:
                # each piece between its unencoded "&"s (``_query_items``) is secret too, where long enough to
                # tell (a piece "a" would blank every "a"): a reader of the raw URI takes it for a parameter
                pieces = [piece for piece in value.split("&") if len(piece) >= 4] if "&" in value else []
                secrets += [value, unquote(value), *pieces, *map(unquote, pieces)]
                kept.append(f"{key}={_encoded(value)}")  # libpq refuses a second "=" or a bad "%" in it
            else:
                if SECRET_PARAMETER.search(name) and len(value) >= 8:  # shorter: as redaction.uri_passwords
                    secrets += [value, unquote(value)]
                kept.append(item)  # as written: libpq decodes its own parameters
        table = collection_of(table, collection, in_uri="table")
        if not table:
            raise ConfigError(
                "option uri: name the table: postgresql://host/db?table=items (or option collection)"
            )
        modes = [unquote(v) for k, _, v in (i.partition("=") for i in kept) if unquote(k) == "sslmode"]
        if modes:
            _check_tls(modes[-1], tls)
        else:
            mode = _sslmode(_hosts(netloc), kept, tls)
            if mode:
                kept.append(f"sslmode={mode}")
        query = "&".join(kept)
        login = (
            ""
            if user is None
            else _encoded(user) + ("" if password is None else f":{_encoded(password)}") + "@"
        )
        conninfo = f"postgresql://{login}{netloc}{path}" + (f"?{query}" if query else "")
        shown_login = "" if user is None else user + ("" if password is None else ":***") + "@"
        return cls(
            conninfo=conninfo,
            table=TableName.parse(table),
            label=_masked(f"{scheme}://{shown_login}{netloc}{path}", query, table),
            passwords=tuple(dict.fromkeys(s for s in secrets if s)),
        )


def _query_items(query: str) -> list[str]:
    """The ``&``-separated items of ``query``, where an item without ``=`` after a ``password=`` one is a
    piece of that password (an ``&`` in it left unencoded: ``?password=Xy7&Tail``): libpq, which has no
    parameter without a value, would refuse the URI quoting the piece, and a repr show it as a parameter.
    The password then holds the ``&``s, as written."""
    items: list[str] = []
    in_password = False
    for item in query.split("&") if query else ():
        if in_password and "=" not in item:
            items[-1] += "&" + item
            continue
        key, equals, _ = item.partition("=")
        in_password = bool(equals) and unquote(key) == "password"
        items.append(item)
    return items


def _userinfo(rest: str) -> tuple[str | None, str | None, str]:
    """``rest`` (the URI after ``://``) as (user, password, what follows the user-info's ``@``), user
    ``None`` without one. The ``@`` is the last one after a user free of ``/``, ``?``, ``#`` and ``@``:
    the last of all (``keys.split_password``) may be one of a query value (``?password=Xq@7``)."""
    at = len(rest)
    while (at := rest.rfind("@", 0, at)) >= 0:
        user, colon, password = rest[:at].partition(":")
        if _NOT_IN_USER.intersection(user) or _in_query(rest, at):
            continue
        return user, (password if colon else None), rest[at + 1 :]
    return None, None, rest


_NOT_IN_USER = frozenset("/?#@")


def _in_query(rest: str, at: int) -> bool:
    """Whether the ``@`` at ``at`` is better read as one in a query value (``h:5432/db?password=Xq@7/8``):
    before it a ``?`` starts ``key=value`` items, and the text before the first ``/`` or ``?`` is a host list
    with numeric ports (in ``u:x?y=z@host`` it is not: ``x?y=z`` is a password)."""
    question = rest.find("?", 0, at)
    if question < 0 or "=" not in rest[question:at]:
        return False
    slash = rest.find("/", 0, question)
    netloc = rest[: slash if slash >= 0 else question]
    ports = [item.rpartition("]")[2].partition(":")[2] for item in netloc.split(",")]
    return all(port.isdigit() or not port for port in ports)


def _encoded(text: str) -> str:
    """``text`` (decoded first, as libpq would) percent-encoded whole: nothing in it ends a part of the URI."""
    return quote(unquote(text), safe="")


def _hosts(netloc: str) -> list[str]:
    """The hosts of ``h1:5432,[::1]:5433`` (decoded: ``%2Ftmp`` is a unix socket), lowercased."""
    hosts = []
    for item in netloc.split(","):
        host = item[1:].partition("]")[0] if item.startswith("[") else item.partition(":")[0]
        hosts.append(unquote(host).lower())
    return [h for h in hosts if h]


def _check_tls(sslmode: str, tls: bool | None) -> None:
    """Option ``tls`` and the URI's ``sslmode`` must not disagree: either may be the one the user meant,
    and taking the URI's would send the password in the clear where ``tls=true`` asked for TLS."""
    if tls is None or (sslmode in TLS_SSLMODES) == tls:
        return
    raise ConfigError(
        f"option tls={'true' if tls else 'false'} and the URI's sslmode={sslmode} disagree: give one "
        f"(TLS is on for sslmode {', '.join(TLS_SSLMODES)})"
    )


def _masked(head: str, query: str, table: str) -> str:
    """The target as messages and reprs show it: ``head`` (scheme to path, its password already ``***``),
    then every parameter whose name (decoded) says it holds a credential (``password``, ``sslpassword``,
    ...: ``keys.SECRET_PARAMETER``) as ``***``, the rest as written, and the table. ``without_password``
    on the whole is the second guard: it blanks what ``keys.split_password`` reads as a password."""
    items = [
        (
            f"{item.partition('=')[0]}=***"
            if SECRET_PARAMETER.search(unquote(item.partition("=")[0]))
            else item
        )
        for item in query.split("&")
        if item
    ]
    items.append(f"table={table}")
    return without_password(f"{head}?{'&'.join(items)}")


def _sslmode(hosts: list[str], params: list[str], tls: bool | None) -> str | None:
    """``sslmode`` to add: ``require`` off the machine, ``disable`` when turned off by name, else none."""
    if tls is False:
        return "disable"
    named = [unquote(p.partition("=")[2]) for p in params if unquote(p.partition("=")[0]) == "host"]
    names = [h for h in hosts + named if h]
    local = all(h.startswith("/") or is_loopback_host(h) for h in names)
    if tls is True or not local:
        return "require"
    return None  # loopback or a unix socket: libpq's own default
