"""Where a key comes from: the option itself, or an environment variable read where the connection opens;
and a URI shown without the password it may hold (``without_password``), for every message that quotes one.

Options built from ``api_key_env`` (or ``embed_api_key_env``) carry the variable's name to remote
workers (a pickled Beam pipeline, which the runner stores), never the key; the variable is read in
the process that connects.
"""

from __future__ import annotations

import os
import re
import socket

from .errors import ConfigError

__all__ = [
    "CONTAINER_SCHEMES",
    "NOT_A_VARIABLE",
    "USERINFO_SCHEMES",
    "key_from",
    "looks_like_variable",
    "shown_variable",
    "split_password",
    "without_password",
]


def key_from(api_key: str | None, api_key_env: str | None, option: str = "api_key_env") -> str | None:
    """``api_key``, else this process's environment variable ``api_key_env``; unset is a ConfigError
    that names the option, the variable and the host, since it is read on the worker where a
    connection opens."""
    if api_key is not None or not api_key_env:
        return api_key
    key = os.environ.get(api_key_env)
    if key is None:
        raise ConfigError(
            f"option {option}: environment variable {shown_variable(api_key_env)} is not set "
            f"on {socket.gethostname()} (pid {os.getpid()}), where the connection opens"
        )
    # a key read from a file keeps its line break (``export KEY=$(cat key.txt)`` does not, a Kubernetes
    # secret does): sent, it fails every request with an error about a header, not the variable
    return key.strip()


NOT_A_VARIABLE = "(not shown: this looks like a key, not a variable's name)"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_DIGIT_RUNS = re.compile(r"[0-9]+")
_MAX_WORD = 24  # OPENAI_API_KEY's words are short; a key's letters run on (hf_QxTbVpLmZrYwKsNdJgHf...)


def looks_like_variable(name: str) -> bool:
    """Whether ``name`` is written as environment variables are: letters, digits and ``_``, all its
    letters of one case (``OPENAI_API_KEY``, ``pinecone_key``), no word (between ``_``) longer than 24
    characters and none with digits in two places (``S3_KEY_2024`` is a name, ``a3f9c2d1`` is hex).

    Keys made of the same characters (Hugging Face's ``hf_…``, Mistral's, Cohere's, Weaviate Cloud's)
    mix cases and digits in long runs: pasted into ``api_key_env``, they must not be quoted."""
    if not _VARIABLE.fullmatch(name) or (name.upper() != name and name.lower() != name):
        return False
    words = name.split("_")
    return all(len(word) <= _MAX_WORD and len(_DIGIT_RUNS.findall(word)) <= 1 for word in words)


def shown_variable(name: str) -> str:
    """``name`` quoted as errors and reprs show it, or ``NOT_A_VARIABLE`` where it looks like a key."""
    return repr(name) if looks_like_variable(name) else NOT_A_VARIABLE


# what goes before a URI's user-info: the scheme and its slashes ("qdrant://"), mistyped ("qdrant:/",
# "qdrant//"), or nothing ("user:pw@host"; "qdrant:user:pw@host", where which is the user is unknowable, so
# the password starts at the first ":")
_BEFORE_USERINFO = re.compile(r"[^/?#@:]*(?::/+|/+)")
# a query parameter whose name says it holds a credential (password=, api_key=, token=, sig=, Azure
# Functions' code=, auth=, ...)
_SECRET_WORDS = r"key|secret|token|passw|sig|credential|code|auth"
SECRET_PARAMETER = re.compile(_SECRET_WORDS, re.IGNORECASE)
# its value runs on across an unencoded "&" whose piece holds no "=" (``password=Xy7&Tail&table=t``): a
# password's, as PostgreSQL reads it, not a parameter of its own; a name holds no "?", "/" or "@" (a user
# named ``token`` made ``postgresql://token:pw@host/app?table=`` a secret parameter's name, and blanked the table)
SECRET_IN_QUERY = re.compile(
    rf"((?:^|[?&;\s])[^=&;\s?/@]*(?:{_SECRET_WORDS})[^=&;\s?/@]*=)([^&;\s]*(?:&[^=&;\s]*(?=[&;\s]|$))*)",
    re.IGNORECASE,
)
# a URI as ``without_password`` reads it, a word but where a password holds a space or a tab (PostgreSQL
# takes one): a user-info (scheme, user, ":") runs on across spaces and tabs to the first "@" on its line,
# and a secret parameter's value to the next "&" or ";", else to the end of its line
_URI = re.compile(
    r"(?=\S)(?:[^/?#@:\s]*(?::/+|/+)[^/?#@:\s]*:[^@\r\n]*@)?"
    rf"(?:\S*?[?&;][^=&;\s?]*(?:{_SECRET_WORDS})[^=&;\s]*=[^&;\r\n]*(?:&[^=&;\r\n]*(?=[&;\r\n]|$))*)?\S*",
    re.IGNORECASE,
)
# a user alone (``qdrant://KEY@host``: a key pasted as the user); not in ABFS and WASB URIs, where it
# names a container (``abfss://container@account.dfs.core.windows.net``; ``staging.refuse_credentials``)
_BARE_USER = re.compile(r"([^/?#@:\s]*)(?::/+|/+)([^/?#@:\s]+)@")
CONTAINER_SCHEMES = frozenset({"abfs", "abfss", "wasb", "wasbs"})
# the schemes whose URI carries credentials (PostgreSQL's user:password@, ?password=; options.parse_uri refuses
# them in any other), and whose user alone is a role's name, shown
USERINFO_SCHEMES = frozenset({"postgresql", "postgres"})
_USER_SHOWN = CONTAINER_SCHEMES | USERINFO_SCHEMES  # a user alone there is a container's or a role's name


def split_password(uri: str) -> tuple[str, str, str] | None:
    """``uri`` (a run of non-space characters) as (what comes before the password, the password, the rest
    from its ``@``), or ``None`` when it holds no ``user:password@``.

    The user-info runs to the LAST ``@``, and the password from the first ``:`` in it: a generated password
    may hold an unencoded ``#``, ``/``, ``?``, ``@`` or ``:``, which a parser reads as the end of the host
    (urlsplit finds no password in ``u:Xq7/pw@h``). An ``@`` in a path or query is read as the host's too:
    that blanks a piece of the path, never shows a piece of a password."""
    at = uri.rfind("@")
    if at < 0:
        return None
    before = _BEFORE_USERINFO.match(uri)
    colon = uri.find(":", before.end() if before else 0, at)
    if colon < 0:
        return None
    return uri[: colon + 1], uri[colon + 1 : at], uri[at:]


def without_password(uri: str) -> str:
    """``uri`` with any password (``user:pw@``, or a parameter such as ``password=``, ``api_key=`` or
    ``token=``) and a user alone (``KEY@host``) shown as ``***``, also in a URI too malformed to parse: the
    one that needs quoting in an error is the mistyped one; and a password holding a space or a tab whole
    (``_URI``). An ``@`` may be a user-info's end or a query password's character (``?password=a@b``): what
    either reading calls a password is blanked, as one run where they overlap."""
    return _URI.sub(_blanked_word, uri)


def _blanked_word(word: re.Match[str]) -> str:
    text = word.group()
    # spaces and tabs within a URI's run (``_URI``) are a password's: read as its characters
    probe = text.replace(" ", "\0").replace("\t", "\0")
    spans = [(m.start(2), m.end(2)) for m in SECRET_IN_QUERY.finditer(probe) if m.end(2) > m.start(2)]
    split = split_password(probe)
    if split is not None:
        spans.append((len(split[0]), len(split[0]) + len(split[1])))
    elif (user := _BARE_USER.match(probe)) is not None and user[1].lower() not in _USER_SHOWN:
        spans.append(user.span(2))
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        text = f"{text[:start]}***{text[end:]}"
    return text
