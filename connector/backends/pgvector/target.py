"""Names and the URI: the table a ``postgresql://`` URI names, and libpq's part of it (password masked)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

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
        return f"{self.schema}.{self.name}" if self.schema else self.name


@dataclass(frozen=True, slots=True)
class PgTarget:
    """A URI split into what libpq gets (``conninfo``) and what the connector keeps."""

    conninfo: str = field(repr=False)  # may hold the password
    table: TableName
    label: str  # the URI with the password masked

    @classmethod
    def parse(cls, uri: str, collection: str | None, tls: bool | None = None) -> PgTarget:
        """Split ``uri``. TLS: the URI's own ``sslmode`` (option ``tls`` saying otherwise is a ``ConfigError``);
        else option ``tls`` (``False``: off by name); else required for a host that is neither loopback nor
        a unix socket."""
        parts = urlsplit(uri)
        database, _, transport = parts.scheme.lower().partition("+")
        if database not in ("postgresql", "postgres") or transport not in ("", "psycopg"):
            raise ConfigError(
                f"option uri: pgvector URIs start postgresql:// or postgres://, not {parts.scheme}://"
            )
        kept: list[str] = []
        table: str | None = None
        for item in parts.query.split("&") if parts.query else ():
            key, _, value = item.partition("=")
            if unquote(key) == "table":
                table = unquote(value)
            else:
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
            mode = _sslmode(parts.hostname, kept, tls)
            if mode:
                kept.append(f"sslmode={mode}")
        query = "&".join(kept)
        conninfo = f"postgresql://{parts.netloc}{parts.path}" + (f"?{query}" if query else "")
        return cls(conninfo=conninfo, table=TableName.parse(table), label=_masked(parts, query, table))


def _check_tls(sslmode: str, tls: bool | None) -> None:
    """Option ``tls`` and the URI's ``sslmode`` must not disagree: either may be the one the user meant,
    and taking the URI's would send the password in the clear where ``tls=true`` asked for TLS."""
    if tls is None or (sslmode in TLS_SSLMODES) == tls:
        return
    raise ConfigError(
        f"option tls={'true' if tls else 'false'} and the URI's sslmode={sslmode} disagree: give one "
        f"(TLS is on for sslmode {', '.join(TLS_SSLMODES)})"
    )


def _masked(parts: Any, query: str, table: str) -> str:
    """The target as messages and reprs show it: the password, and every parameter whose name (decoded)
    says it holds a credential (``password``, ``sslpassword``, ...: ``keys.SECRET_PARAMETER``), as ``***``;
    ``keys.without_password`` finds the password, in the order the URI had (urlsplit's own ``password``
    misses one holding ``/``, ``?`` or ``#``)."""
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
    # libpq URIs have no fragment: a "#" is the password's (urlsplit ended the netloc there), put back in place
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return without_password(f"{parts.scheme}://{parts.netloc}{parts.path}{fragment}?{'&'.join(items)}")


def _sslmode(host: str | None, params: list[str], tls: bool | None) -> str | None:
    """``sslmode`` to add: ``require`` off the machine, ``disable`` when turned off by name, else none."""
    if tls is False:
        return "disable"
    hosts = [unquote(p.partition("=")[2]) for p in params if unquote(p.partition("=")[0]) == "host"]
    names = [h for h in ([host] if host else []) + hosts if h]
    local = all(h.startswith("/") or is_loopback_host(h) for h in names)
    if tls is True or not local:
        return "require"
    return None  # loopback or a unix socket: libpq's own default
