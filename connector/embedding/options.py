"""``EmbedOptions``: what an embedding client needs, validated once; the key is masked in ``repr``.

The writer options of the embedding stage (``embed_url``, ``embed_model``, ``embed_api_key``…) map
onto these fields one to one, without the ``embed_`` prefix (``WRITER_OPTIONS``); parsed with
``prefix="embed_"``, errors name the writer's option. The write's ``max_retries``, ``timeout_s`` and
``isolation_budget`` are these fields too (``SHARED_OPTIONS``): they are per request, and an embedding
request is one of the write's requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ..errors import ConfigError
from ..keys import key_from, looks_like_variable, without_password
from ..limits import MAX_EMBED_INPUTS
from ..redaction import caught, returned

__all__ = ["SHARED_OPTIONS", "WRITER_OPTIONS", "EmbedOptions", "parse_embed_options"]

# the writer's option -> the EmbedOptions field
WRITER_OPTIONS = {
    "embed_url": "url",
    "embed_model": "model",
    "embed_api_key": "api_key",
    "embed_api_key_env": "api_key_env",
    "embed_batch_size": "batch_size",
    "embed_max_batch_chars": "max_batch_chars",
    "embed_max_concurrency": "max_concurrency",
    "embed_dimensions": "dimensions",
}
# the writer's options, of every request it sends, that are the EmbedOptions fields of the same name
SHARED_OPTIONS = ("max_retries", "timeout_s", "isolation_budget")


class EmbedOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of an OpenAI-compatible embeddings client.

    ``url`` is the server's base URL: ``/v1/embeddings`` is appended, or ``/embeddings`` when it
    ends in ``/v1`` (the OpenAI client's ``base_url``); a URL ending in ``/embeddings`` is used as is.
    ``encoding_format="base64"`` asks for base64 and falls back to floats for good when the server
    refuses it; ``"float"`` never asks for base64.
    """

    url: str
    model: str
    api_key: str | None = None
    api_key_env: str | None = None
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=MAX_EMBED_INPUTS)] = 64
    max_batch_chars: Annotated[int, msgspec.Meta(ge=1)] = 200_000
    max_concurrency: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 32
    dimensions: Annotated[int, msgspec.Meta(ge=1, le=65_536)] | None = None
    timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 60.0
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=50)] = 5
    encoding_format: Literal["base64", "float"] = "base64"
    isolation_budget: Annotated[float, msgspec.Meta(ge=0, le=100)] = (
        1.0  # requests per input sent (a writer's)
    )
    option_prefix: str = ""  # how errors name these options: "embed_" in a writer's

    def __post_init__(self) -> None:
        if self.api_key is not None and self.api_key != self.api_key.strip():
            # a key read from a file ends in a line break, which an Authorization header cannot carry
            msgspec.structs.force_setattr(self, "api_key", self.api_key.strip())
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"option url: {without_password(self.url)!r} is not an http:// or https:// URL")
        if not self.model:
            raise ConfigError("option model: give the embedding model's name")
        if self.api_key is not None and self.api_key_env is not None:
            raise ConfigError("options api_key and api_key_env exclude each other: give one")

    @property
    def endpoint(self) -> str:
        """``url`` with ``/v1/embeddings`` appended to its path (``/embeddings`` after ``/v1``, nothing
        after ``/embeddings``); a query (Azure's ``api-version``, a gateway's key) is kept after it."""
        parts = urlsplit(self.url)
        path = parts.path.rstrip("/")
        if not path.endswith("/embeddings"):
            path += "/embeddings" if path.endswith("/v1") else "/v1/embeddings"
        return urlunsplit(parts._replace(path=path))

    @property
    def key_option(self) -> str:
        """The option that holds the key, as errors name it (``embed_api_key`` in a writer's)."""
        return f"{self.option_prefix}{'api_key_env' if self.api_key_env is not None else 'api_key'}"

    def credential(self) -> str | None:
        """``api_key``, else this process's environment variable ``api_key_env`` (read where it is used)."""
        return key_from(self.api_key, self.api_key_env, f"{self.option_prefix}api_key_env")

    def __repr__(self) -> str:
        shown = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is None or name == "option_prefix":
                continue
            if name == "url":
                value = without_password(value)  # a password in the URL is a credential too
            hidden = name == "api_key" or (name == "api_key_env" and not looks_like_variable(value))
            shown.append(f"{name}=***" if hidden else f"{name}={value!r}")
        return f"EmbedOptions({', '.join(shown)})"

    __str__ = __repr__


def parse_embed_options(raw: Mapping[str, Any], *, prefix: str = "") -> EmbedOptions:
    """Validate ``raw`` (strings or values; ``None`` means the default); one ``ConfigError`` names the
    option, as ``prefix`` + field (the writer's ``embed_url`` for ``url``). The error is raised from a
    frame that no longer holds ``raw``, whose key is in clear (``options.parse_options``)."""
    outcome = caught(_parse, raw, prefix)
    del raw
    try:
        return returned(outcome)
    finally:
        del outcome  # an error held by a frame it passed is a cycle (``redaction.returned``)


def _parse(raw: Mapping[str, Any], prefix: str) -> EmbedOptions:
    if "option_prefix" in raw:  # how errors name these options: set here, never by a caller
        raise ConfigError(f"invalid embedding options: unknown option {prefix}option_prefix")
    values = {key: value for key, value in raw.items() if value is not None}
    for required in ("url", "model"):
        if not values.get(required):
            raise ConfigError(f"option {prefix}{required} is required")
    url = values["url"]
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        shown = without_password(url) if isinstance(url, str) else url
        raise ConfigError(f"option {prefix}url: {shown!r} is not an http:// or https:// URL")
    if values.get("api_key") is not None and values.get("api_key_env") is not None:
        raise ConfigError(f"options {prefix}api_key and {prefix}api_key_env exclude each other: give one")
    try:
        return msgspec.convert({**values, "option_prefix": prefix}, EmbedOptions, strict=False)
    except msgspec.ValidationError as exc:
        message = str(exc)
        if " - at `$." in message:
            text, _, where = message.partition(" - at `$.")
            message = f"option {prefix}{where.rstrip('`')}: {text}"
        elif message.startswith("Object contains unknown field"):
            message = f"unknown option {prefix}{message.split('`')[1] if '`' in message else message!r}"
        raise ConfigError(f"invalid embedding options: {message}") from None
