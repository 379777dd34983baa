"""Redaction: the credentials a client sends, blanked out of every text built from a server's reply.

Servers echo keys: a 401 body ("Invalid API key sk-…"), a 400 message, a 500 page or gRPC status
details may quote what the request carried. So every message the connector makes of a reply (an
HTTP body, gRPC details, a PostgreSQL error, a Milvus status, Weaviate's per-object errors, an
embeddings endpoint's error, a bulk import's status) goes through ``Secrets.blank`` before it
reaches an error, a report, a log or a Spark or Beam exception. ``Secrets.of(options)`` holds the
credentials in use: the api key (or the variable ``api_key_env`` names, and the password of a
``user:password`` key, as Milvus takes), the embedding key, and a password in a URI (as written and
decoded). Each transport is built with them, and each backend that reads messages out of replies that
succeeded (a Milvus status, Weaviate's per-object errors) blanks them with the same ``Secrets``.

The rules:

- every occurrence of a credential becomes ``***``, also trimmed (HTTP servers drop a header value's
  surrounding whitespace, then echo it), in either case (a server that lower-cases what it quotes), with
  any of its characters that encoders escape (all but ASCII letters, digits and ``-._~``) percent-encoded
  (either case of hex), JSON-escaped (``\\u0026``, ``\\/``) or an HTML entity (a letter or digit so
  spelled is not matched: no encoder writes one so, and matching it would make the pattern 10 times
  longer and blanking twice as slow), wrapped or folded across lines (the next line indented, a hyphen
  added at the break) or split by a space a server put in, and in base64 (how Milvus sends its token),
  of the key alone or of a longer text holding it at any byte offset;
  ``"Bearer <key>"`` holds the key, so it is blanked with it. One pattern matches all of these, so
  blanking costs a scan of the text, and runs only on texts made of replies (errors, logs);
- parts of a credential of 12 characters or more, as servers quote them, are blanked too, all in either case
  (a server that upper- or lower-cases what it quotes): as servers that mask keys quote it (OpenAI: "Incorrect
  API key provided: sk-abc*****xyz9"): its first 3 characters (and any more of its own), a mask run, and its
  last 4; a mask run of 4 or more and its last 4 (and any more of its own before them: "****wxyz",
  "...kW0aE", "…W0aE"); a prefix of 8 characters or more (and any more of its own) and a mask run
  ("sk-proj-Zq8vL2mN..."); and a prefix or a suffix of two thirds of it or more, 8 characters at least (a
  message the server cut mid-key, a key missing its first or last character). A mask run is 3 or more of
  ``*``, ``#`` or ``•``, each as it is, percent-encoded (``%2A``, as a URL or a form field quotes it) or
  JSON-escaped (``\\u002a``), or an ellipsis (``...``, ``…``, ``%E2%80%A6``, ``\\u2026``), or 6 or more ``X``
  (fewer are words: "XXL", "xx"), and any of these after it ("****..."); a key's last 4 characters after
  fewer than 4 (``***wxyz``) or after nothing are not blanked: ordinary words end so too. A suffix after a
  mask, and a prefix or a suffix alone, is blanked where it is a word of its own (not "postgres" in
  "postgresql://" for a password ``postgres123!``), and a prefix before a mask or alone holds the credential's
  first character that is not a letter, a suffix alone its last: one of letters only may be an ordinary word
  ("user postgres"), and blanking it would tell how the credential starts. These branches are in the one
  pattern, grouped under their first character (``_alternatives``); those starting with a mask or a suffix
  have the engine stop at more offsets: blanking a 300-byte text costs 1.5 to 3 times what whole forms alone
  do (~12 to 16 us for one key, ~30 to 40 us for three credentials);
- blank before shortening: a message cut first can keep a piece of a key that no longer matches;
- a credential this process cannot read (an unset ``embed_api_key_env``) was not sent from here,
  so nothing here can echo it;
- a library that logs what a server sent (httpcore's debug trace quotes a reply's headers whole,
  psycopg's a failed connection's message) gets a filter on its loggers (``blank_logs``) that
  blanks the credentials of every transport alive;
- no frame on the traceback of an error a transport raises holds what a request carried (its headers,
  the key among them) or a raw reply: tools print a traceback's local variables (``traceback``'s
  ``capture_locals``, pytest ``--showlocals``, rich, Sentry). A transport makes its error in a frame that
  returns it, raises it from one that holds neither, and ``detached`` drops the frames (and the chained
  errors) of an error raised on the way.
"""

from __future__ import annotations

import base64
import functools
import itertools
import logging
import re
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from .errors import ConfigError, ConnectorError, MissingExtra
from .keys import SECRET_IN_QUERY, SECRET_PARAMETER, split_password

if TYPE_CHECKING:
    from .embedding.options import EmbedOptions
    from .options import BackendOptions

__all__ = [
    "BLANK",
    "Secrets",
    "blank_logs",
    "caught",
    "detached",
    "key_refused",
    "uri_passwords",
    "without_frames",
]

BLANK = "***"
E = TypeVar("E", bound=BaseException)
T = TypeVar("T")


class Secrets:
    """The credentials in use; ``blank(text)`` is ``text`` without any of them. Empty: blanks nothing."""

    __slots__ = ("__weakref__", "_forms", "_made", "_parts", "_pattern")

    def __init__(self, *values: str | None) -> None:
        # the key trimmed too: HTTP servers drop a field value's surrounding whitespace (a key pasted with
        # a trailing space) and echo what they read
        kept_values = {kept for value in values if value for kept in {value, value.strip()} if kept}
        self._forms = frozenset(form for kept in kept_values for form in _forms(kept))
        self._parts = frozenset(part for kept in kept_values for part in _parts(kept))
        # compiled at the first text blanked (about 50-150 ms for one key): a write that fails nothing and logs
        # nothing of a server's never pays it
        self._pattern: re.Pattern[str] | None = None
        self._made = False

    @classmethod
    def of(cls, options: BackendOptions | EmbedOptions) -> Secrets:
        """The credentials a client with ``options`` sends: api key, embedding key, URI passwords (an
        embeddings client's own options: its key, and a password in its URL)."""
        from .keys import key_from
        from .options import BackendOptions

        if not isinstance(options, BackendOptions):
            return cls(_readable(options.credential), *uri_passwords(options.url, endpoint=True))

        def embed_key() -> str | None:
            return key_from(options.embed_api_key, options.embed_api_key_env, "embed_api_key_env")

        key = _readable(options.credential)
        return cls(
            key,
            key.partition(":")[2] if key else None,  # a user:password token's password
            _readable(embed_key),
            *uri_passwords(options.uri),
            *uri_passwords(options.embed_url or "", endpoint=True),
        )

    @classmethod
    def joined(cls, many: list[Secrets]) -> Secrets:
        """Every credential of ``many``, blanked in one pass: blanking one set after another lets a
        short credential (a key ``k``) cut a piece out of a longer one (``sk-…``) that then no longer
        matches and shows."""
        joined = cls()
        joined._forms = frozenset().union(*(secrets._forms for secrets in many))
        joined._parts = frozenset().union(*(secrets._parts for secrets in many))
        return joined

    def blank(self, text: str) -> str:
        """``text`` with every credential (and its encoded forms) shown as ``***``."""
        if not text or not self:
            return text
        if not self._made:  # two threads may both compile it: the same pattern (``_pattern_of`` caches it)
            self._pattern, self._made = _pattern_of(self._forms, self._parts), True
        return text if self._pattern is None else self._pattern.sub(BLANK, text)

    def __bool__(self) -> bool:
        return bool(self._forms or self._parts)

    def __repr__(self) -> str:
        return "Secrets(***)" if self else "Secrets()"


_ENDPOINT_KEY_CHARS = 16  # a query value of an endpoint this long may be a key, whatever its name
_NOT_KEYS = frozenset({"api-version", "api_version"})  # Azure OpenAI's: a date


# a piece of a password split at an unencoded "&" blanked where it shows alone: shorter would blank words
_PIECE_CHARS = 4


def uri_passwords(uri: str, endpoint: bool = False) -> list[str]:
    """The password of a URI (``user:password@``) as written and decoded, a ``password=`` parameter's, and
    a key's or token's in a parameter whose name says so (``keys.SECRET_PARAMETER``). With ``endpoint``
    (an embeddings endpoint's URL, whose query a gateway may hold its key in, under any name) also every
    query value long enough to be a key, but an ``api-version``.

    The password as ``keys.split_password`` reads it (up to the last ``@``: it may hold an unencoded ``#``,
    ``/`` or ``?``) and as urlsplit does, which is what a driver that parses the URI sends (one with a
    space in it too)."""
    if not uri:
        return []
    passwords, words = [], []
    for word in uri.split():
        split = split_password(word)
        passwords.append(split[1] if split else "")
        words.append(split[0] + split[2] if split else word)  # the query, not a "?" of the password
    try:
        passwords.append(urlsplit(uri).password or "")
        query = urlsplit(" ".join(words)).query
    except ValueError:  # a malformed netloc (a bracket left open): the password is still found above
        query = ""
    found = [form for password in passwords if password for form in (password, unquote(password))]
    found += [
        value
        for key, value in parse_qsl(query)
        # a key or token in the query (an endpoint that takes ?key=): blanked where a server quotes it,
        # if long enough to be one (a short value would blank ordinary words)
        if value
        and (
            key.lower() == "password"
            or (SECRET_PARAMETER.search(key) and len(value) >= 8)
            or (endpoint and len(value) >= _ENDPOINT_KEY_CHARS and key.lower() not in _NOT_KEYS)
        )
    ]
    # a password= run on across an unencoded "&" (PostgreSQL reads "Xy7&Tail" as one): parse_qsl leaves
    # its pieces without "=" out, which a server's message may quote alone
    for match in SECRET_IN_QUERY.finditer(query):
        if "&" in match[2]:
            pieces = [piece for piece in match[2].split("&") if len(piece) >= _PIECE_CHARS]
            found += [match[2], unquote(match[2]), *pieces, *map(unquote, pieces)]
    return list(dict.fromkeys(found))


def returned(outcome: T | BaseException) -> T:
    """``outcome``, or, if it is an error, that error raised from this frame, which holds nothing else.

    For an error made by a frame holding what no traceback may show (a request's headers, a raw reply,
    a key: tools print a traceback's locals), which returns it instead of raising it: ``return
    returned(self._exchange(...))`` leaves it in no caller's locals either. The local is dropped as it
    goes: an error held by a frame it passes is a cycle (error -> traceback -> frame -> error) that
    keeps every caller's frame, their batches with them, until a full garbage collection."""
    if isinstance(outcome, BaseException):
        try:
            raise outcome
        finally:
            del outcome
    return outcome


def key_refused(
    error: ConfigError,
    fields: Iterable[tuple[str, str]],
    secrets: Secrets,
    option: str = "api_key (or api_key_env)",
) -> ConfigError | None:
    """``error``, of a header or gRPC metadata field no request can carry (its text starts with the field's
    name), naming ``option`` when that field's value holds a credential: the field's name alone (``Api-Key: a
    line break ...``) names nothing a user wrote. None when the field holds none."""
    name = str(error).removeprefix("gRPC metadata ").partition(":")[0]
    if any(field == name and secrets.blank(value) != value for field, value in fields):
        return ConfigError(f"option {option}: {error}")
    return None


def detached(error: E) -> E:
    """``error`` without the frames it was raised through and the errors it was raised during (its
    ``__context__`` and ``__cause__``): their locals hold a request's headers or a raw reply. For the
    connector's own errors, whose message says what happened."""
    error.__traceback__ = error.__context__ = error.__cause__ = None
    return error


def caught(parse: Callable[..., T], *args: Any) -> T | ConnectorError:
    """``parse(*args)``, or the ``ConfigError`` (or ``MissingExtra``) it raised, without its frames
    (``without_frames``): returned, to be raised by a caller that first drops what it was given (options,
    keys in clear), from a frame that holds none (``returned``)."""
    try:
        return parse(*args)
    except (ConfigError, MissingExtra) as exc:
        return without_frames(exc)


def without_frames(error: E) -> E:
    """``error`` without the frames it was raised through, whose locals hold options in clear (keys):
    for an error of parsing options, raised again from a frame that holds none (``returned``).
    A ``ConfigError``'s chained errors go too (its message says what is wrong; ``detached``);
    a ``MissingExtra`` keeps the ``ImportError`` it was raised from, in an import that holds no options."""
    if isinstance(error, ConfigError):
        return detached(error)
    error.__traceback__ = None
    return error


class _BlankLogs(logging.Filter):
    """Blanks the credentials of every transport alive out of a library's log records."""

    def __init__(self) -> None:
        super().__init__()
        self._alive: weakref.WeakSet[Secrets] = weakref.WeakSet()  # gone with their transports
        self._lock = threading.Lock()
        self._joined: tuple[frozenset[frozenset[tuple[str, bool]]], Secrets] | None = None

    def _all_alive(self) -> Secrets:
        """The credentials of every transport alive, as one ``Secrets`` (made again when they change)."""
        with self._lock:
            alive = list(self._alive)
            key = frozenset(secrets._forms for secrets in alive)
            if self._joined is None or key != self._joined[0]:
                self._joined = (key, Secrets.joined(alive))
            return self._joined[1]

    def add(self, secrets: Secrets) -> None:
        with self._lock:
            self._alive.add(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self._all_alive()
        if secrets:
            try:
                text = record.getMessage()
            except (TypeError, ValueError):  # arguments that do not fit: the handler reports it, not us
                return True
            blanked = secrets.blank(text)
            if blanked != text:
                record.msg, record.args = blanked, None
        return True


_LOG_FILTER = _BlankLogs()


def blank_logs(secrets: Secrets, *loggers: str) -> None:
    """Blank ``secrets`` out of what ``loggers`` record, for as long as ``secrets`` are in use."""
    if not secrets:
        return
    _LOG_FILTER.add(secrets)
    for name in loggers:
        logger = logging.getLogger(name)
        if _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)


@functools.lru_cache(maxsize=64)  # clients made again with the same credentials compile it once
def _pattern_of(
    forms: frozenset[tuple[str, bool]], parts: frozenset[tuple[int, int, str]] = frozenset()
) -> re.Pattern[str] | None:
    # the longest first, and of a credential its masked forms, then its whole forms, then its pieces: a form
    # that holds another (a key ``k`` within a key ``sk-…``, a piece of a key within the key quoted
    # percent-encoded or folded) goes whole
    ranked = [(len(form), _WHOLE, branch) for form, cased in forms for branch in _spelled(form, cased)]
    ranked += parts
    ranked.sort(key=lambda part: (-part[0], -part[1]))
    alternatives = _alternatives([branch for _, _, branch in ranked])
    return re.compile(alternatives) if alternatives else None


# a branch's first character where it is a literal one: escaped (``\*``) or as it is, not quantified
_FIRST_LITERAL = re.compile(r"(?:\\(\W)|([^\\()\[\]|.^$*+?{}]))(?![*+?{])")


def _alternatives(branches: list[str]) -> str:
    """``branches`` as one alternation, in their order, those starting with the same literal character under it
    once (``a(?:b|c)`` for ``ab|ac``). At an offset the regex engine tries the branches one after another; so it
    tests each first character once (blanking with three credentials costs about half). Branches starting
    with different characters never match at the same offset, so the order that matters (the longest first)
    holds, as every branch starts with a literal character (``_spelled``)."""
    groups: dict[str, list[str]] = {}
    for branch in branches:
        first = _FIRST_LITERAL.match(branch)
        start = re.escape(first[1] or first[2]) if first else ""
        groups.setdefault(start, []).append(branch[first.end() :] if first else branch)
    return "|".join(
        start + (f"(?:{'|'.join(rests)})" if len(rests) > 1 else rests[0]) for start, rests in groups.items()
    )


_MIN_MASKED_KEY = 12  # shorter credentials: what a mask or a cut shows is most of them, or common words
_MIN_PIECE = 8  # a piece of a credential shorter than this says little of it, and may be a word
# what a server puts for the hidden part of a key, each spelling starting with a literal character (``_spelled``):
# a character that hides one of the key's (``*``, ``#``, ``•``), an ellipsis (``…`` or ``...``), each as it is,
# percent-encoded (as a URL or a form field quotes it) or JSON-escaped; or a run of 6 ``X`` (fewer are words: "XXL")
_HIDING = (r"\*", "%2[aA]", r"\\u002[aA]", "#", "•", "%[eE]2%80%[aA]2", r"\\u2022")
_ELLIPSES = ("…", "%[eE]2%80%[aA]6", r"\\u2026")
_MIN_X_MASK = 6
_X_RUN = f"(?:[Xx]{{{_MIN_X_MASK - 1},}}+|[Xx]{{{_MIN_X_MASK - 1},64}})"
# more of a run after its start, in any order ("****..."); taken whole (possessive), so a long run costs one scan
_MASK_GOES_ON = "(?:" + "|".join((*_HIDING, *_ELLIPSES, r"\.\.\.+")) + ")*+"


def _run_start(unit: str, before: tuple[str, ...] = (*_HIDING, *_ELLIPSES, r"\.\.\.")) -> str:
    """``unit`` where no mask goes on before it: a run is tried from its first character only (tried from each,
    a run of n characters would cost n scans of the rest of it)."""
    return unit + "".join(f"(?<!{mask}{unit})" for mask in before)


def _mask_runs(hidden: int) -> list[str]:
    """Patterns of a mask run that hides ``hidden`` characters or more (an ellipsis: any number), one per way it
    may start, each with a literal character first: a branch of the one pattern that starts with a mask has the
    regex engine stop only where one may start (``_spelled``)."""
    repeated = f"(?:{'|'.join(_HIDING)}){{{hidden - 1}}}"
    return [
        *(_run_start(hiding) + repeated + _MASK_GOES_ON for hiding in _HIDING),
        *(_run_start(ellipsis) + _MASK_GOES_ON for ellipsis in _ELLIPSES),
        _run_start(r"\.\.\.", (*_HIDING, *_ELLIPSES, r"\.")) + r"\.*+" + _MASK_GOES_ON,
        # from any of its first 7 characters (those before a mask may be the key's own x); whole, or of up to 64
        # (the key's characters after it may start with an x): each start tries at most 64 lengths
        *(_run_start(x, (f"[Xx]{{{_MIN_X_MASK}}}",)) + _X_RUN for x in "Xx"),
    ]


# after a part of the key a server shows: a run of 3 or more; before its end alone, of 4 or more
_MASK_RUN = f"(?:{'|'.join(_mask_runs(3))})"
_MASK_BEFORE_SUFFIX = _mask_runs(4)
# the order of a credential's forms in the pattern (``_pattern_of``); a mask before what holds its first part
_MASKED, _MASKED_PREFIX, _MASKED_SUFFIX, _WHOLE, _PIECE = 4, 3, 2, 1, 0
# where a piece starts or ends, the text does too: not in the middle of a word ("postgres" in "postgresql")
_WORD_ENDS = r"(?!(?<=\w)\w)"


def _parts(value: str) -> list[tuple[int, int, str]]:
    """Patterns for parts of ``value`` a server may quote, for credentials of 12 characters or more, each
    with its rank in the pattern, all in either case: as servers that mask keys quote it (OpenAI:
    ``sk-abc****xyz9``): its first 3 characters, maybe more of its own, a mask run (``_mask_runs``), maybe more of
    its own, and its last 4; a mask run of 4 or more, maybe more of its own, and its last 4 (``****wxyz``,
    ``...kW0aE``); or a prefix of 8 characters or more (and more of its own) and a mask run (``sk-proj-Zq8v...``);
    and a prefix or a suffix of two thirds of it or more, 8 characters at least, as a word of its own (a message
    cut mid-key, a key missing a character). A prefix or a suffix shows a character other than a letter: one of
    letters alone may be a word ("postgres" of a password ``postgres123!``, in "user postgres"), and blanking it
    would also tell how the credential starts."""
    if len(value) < _MIN_MASKED_KEY:
        return []
    # at most as many as it has: no more to try where a long run of them does not end as the credential does
    own = "[" + "".join(sorted(map(re.escape, _cases(value)))) + f"]{{0,{len(value)}}}"
    end = own + _in_either_case(value[-4:])
    masked = [(len(value), _MASKED, p) for p in _either_case(value[:3], own + _MASK_RUN + end)]
    masked += [(len(value), _MASKED_SUFFIX, mask + end + _WORD_ENDS) for mask in _MASK_BEFORE_SUFFIX]
    # a prefix holds the first character that is not a letter, a suffix the last
    not_letters = [at for at, char in enumerate(value) if not char.isalpha()]
    if not not_letters:
        return masked
    masked += [
        (len(value), _MASKED_PREFIX, p)
        for p in _either_case(value[: max(_MIN_PIECE, not_letters[0] + 1)], own + _MASK_RUN)
    ]
    shortest = max(_MIN_PIECE, -(-2 * len(value) // 3))
    shortest_prefix, shortest_suffix = (
        max(shortest, not_letters[0] + 1),
        max(shortest, len(value) - not_letters[-1]),
    )
    pieces: list[tuple[int, int, str]] = []
    if shortest_prefix <= len(value):
        longer = ""  # more of the key, up to all of it: each character only after the one before it
        for char in reversed(value[shortest_prefix:]):
            longer = f"(?:{_in_either_case(char)}{longer})?"
        pieces += [
            (len(value), _PIECE, p)
            for p in _either_case(value[:shortest_prefix], longer + _WORD_ENDS, starting_a_word=True)
        ]
    pieces += [
        (size, _PIECE, p)
        for size in range(shortest_suffix, len(value))
        for p in _either_case(value[-size:], _WORD_ENDS, starting_a_word=True)
    ]
    return masked + pieces


def _either_case(text: str, then: str, *, starting_a_word: bool = False) -> list[str]:
    """Patterns for ``text`` in either case followed by ``then`` (with ``starting_a_word``, where no word goes on
    before it); one per case of its first character, so each starts with a literal one (``_spelled``)."""
    return [
        re.escape(first)
        + (f"(?<!\\w{re.escape(first)})" if starting_a_word and re.match(r"\w", first) else "")
        + _in_either_case(text[1:])
        + then
        for first in _cases(text[0])
    ]


def _in_either_case(text: str) -> str:
    return "".join(
        f"[{''.join(map(re.escape, cases))}]" if len(cases := _cases(char)) > 1 else re.escape(char)
        for char in text
    )


def _cases(text: str) -> tuple[str, ...]:
    """``text``'s characters in either case, each once (``"ß".upper()`` is ``"SS"``: not one character)."""
    return tuple(dict.fromkeys(c for char in text for c in (char, char.lower(), char.upper()) if len(c) == 1))


# where a server wrapped or folded the text between two characters: line breaks (as they are, or JSON-escaped),
# the next line's indent, a hyphen it added at the break, or a space or tab it put in
_WRAP = r"(?:[- \t\r\n]|\\[rnt])*"
_BREAK = r"(?:\r?\n|\\r?\\n)?"
_HTML_NAMED = {"&": ("&amp;",), "<": ("&lt;",), ">": ("&gt;",), '"': ("&quot;",), "'": ("&#39;", "&apos;")}
_JSON_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _spelled(form: str, cased: bool) -> list[str]:
    """Patterns matching ``form`` with each character in any spelling a server may give it, mixed as
    servers mix them (Go's JSON escapes only ``&<>``; a page escapes only what HTML needs), with ``cased``
    a letter in either case (a server that echoes a key lower- or upper-cased), and a wrap between characters (a long
    value wrapped or folded, ``_WRAP``).

    One pattern for each spelling of the first character: when every branch of the pattern starts with a
    literal character, the regex engine skips to the offsets where one may start; a class or a group
    first has it try every branch at every offset (7 times slower on a 300-byte text)."""
    rest = ""
    for before, char in itertools.pairwise(form):
        # beside a space of the key's own, a line break only: "key  k" would match from its first space
        wrap = _BREAK if before.isspace() or char.isspace() else _WRAP
        rest += wrap + f"(?:{'|'.join(_spellings(char, cased))})"
    return [first + rest for first in _spellings(form[0], cased)] if form else []


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


@functools.lru_cache(maxsize=1024)
def _spellings(char: str, cased: bool = False) -> tuple[str, ...]:
    """One character as sent (with ``cased`` a letter in either case), percent-encoded (either case of hex),
    JSON-escaped (``\\u0026``, ``\\/``), or as an HTML entity (named, decimal or hex): patterns, each
    starting with a literal character."""
    chars = _cases(char) if cased else (char,)
    if char in _UNRESERVED:  # no encoder escapes these; their other spellings only cost time
        return tuple(map(re.escape, chars))  # a "." as it is would match any character
    code = ord(char)
    units = [code] if code < 0x10000 else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + (code & 0x3FF)]
    ways = [
        "".join(f"%{_any_case(f'{byte:02x}')}" for byte in char.encode("utf-8", "surrogatepass")),
        "".join(f"\\\\u{_any_case(f'{unit:04x}')}" for unit in units),
        f"&#0*{code};",
        f"&#[xX]0*{_any_case(f'{code:x}')};",
    ]
    if char == " ":
        ways.append(r"\+")  # form encoding
    if char in _JSON_SHORT:
        ways.append(re.escape(_JSON_SHORT[char]))
    ways += _HTML_NAMED.get(char, ())
    return (*ways, *map(re.escape, chars))  # last: a key ending in a backslash takes its JSON escape whole


def _any_case(hex_digits: str) -> str:
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in hex_digits)


_MIN_BASE64_PIECE = 8  # shorter runs of base64 would blank unrelated text (and say little of a key)


def _forms(value: str) -> set[tuple[str, bool]]:
    """``value`` as a server may quote it, each with whether its letters may come in either case: as sent
    (each character in any spelling, ``_spelled``), and in base64, standard or URL-safe: of the value alone,
    or of a longer text holding it at any offset (a header block, ``user:key``), where only the characters
    made of the value's bits alone are fixed (in their case: base64 of the key in another case is another
    text, and either case of each base64 letter would only make the pattern slow to compile)."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = {value}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(raw).decode()
        forms |= {whole, whole.rstrip("=")}
        for offset in range(3):
            text = encode(b"\0" * offset + raw).decode().rstrip("=")
            # character i holds bits [6i, 6i + 6); the value's bits are [8 offset, 8 (offset + len))
            piece = text[-(-8 * offset // 6) : 8 * (offset + len(raw)) // 6]
            if len(piece) >= _MIN_BASE64_PIECE:
                forms.add(piece)
    return {(form, form == value) for form in forms}


def _readable(read: Callable[[], str | None]) -> str | None:
    try:
        return read()
    except ConfigError:  # a variable this process lacks: nothing sent from here holds it
        return None
