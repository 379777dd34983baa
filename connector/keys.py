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

__all__ = ["key_from", "without_password"]


def key_from(api_key: str | None, api_key_env: str | None, option: str = "api_key_env") -> str | None:
    """``api_key``, else this process's environment variable ``api_key_env``; unset is a ConfigError
    that names the option, the variable and the host, since it is read on the worker where a
    connection opens."""
    if api_key is not None or not api_key_env:
        return api_key
    key = os.environ.get(api_key_env)
    if key is None:
        raise ConfigError(
            f"option {option}: environment variable {api_key_env!r} is not set "
            f"on {socket.gethostname()} (pid {os.getpid()}), where the connection opens"
        )
    return key


# user:pw@ after the start or any ":" or "/", so a mistyped separator ("qdrant:/u:pw@h", "qdrant//u:pw@h")
# is blanked too; the password runs to the host's "@", the last one before the path ("u:p@ss@h")
_PASSWORD_IN_NETLOC = re.compile(r"((?:^|[:/])[^/?#@:\s]*:)[^/?#\s]*@")
# a query parameter whose name says it holds a credential (password=, api_key=, token=, sig=, ...)
_SECRET_WORDS = r"key|secret|token|passw|sig|credential"
SECRET_PARAMETER = re.compile(_SECRET_WORDS, re.IGNORECASE)
_PASSWORD_IN_QUERY = re.compile(
    rf"((?:^|[?&;\s])[^=&;\s?]*(?:{_SECRET_WORDS})[^=&;\s]*=)[^&;\s]*", re.IGNORECASE
)


def without_password(uri: str) -> str:
    """``uri`` with any password (``user:pw@``, or a parameter such as ``password=``, ``api_key=`` or
    ``token=``) shown as ``***``, also in a URI too malformed to parse: the one that needs quoting in an
    error is the mistyped one."""
    return _PASSWORD_IN_QUERY.sub(r"\1***", _PASSWORD_IN_NETLOC.sub(r"\1***@", uri))
