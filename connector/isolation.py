"""The one walk that finds exactly the rows a server refuses in a request it refused whole.

Shared by the upsert engine (rows) and the embedding client (texts), which send, count and account
for each probe their own way. The rule: depth first, left before right (input order), so memory is
one path of halves. Each entry holds (or, when its twin was accepted, must hold) a refused row, with
the last refusal seen above it for messages. A half is sent whole only when nothing says it is
refused; a single row is always sent, so no row is blamed by inference. A refusal of the request's
size (``refuses_size``: 413, too many inputs or tokens per request) says nothing of its rows: once one
half is accepted, the other is sent whole too, not taken to hold a refused row and split to single rows. ``may_go_on`` is asked
before each split and may fail the part itself (a budget spent, a stopped write), which ends that
branch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sized
from typing import TypeVar

from .errors import Rejected

__all__ = ["ACCEPTED", "GONE", "isolate", "refuses_size"]

ACCEPTED, GONE = object(), object()  # what a probe came to, besides a refusal

# how servers refuse a request for its size, not its rows: TEI's "batch size 64 > maximum allowed batch
# size 32", OpenAI's "Too many inputs" and "max 300000 tokens per request", proxies' 413 wordings
_SIZE_REFUSAL = re.compile(
    r"maximum allowed batch size|too many inputs|tokens per request|payload too large|request entity too large",
    re.IGNORECASE,
)


def refuses_size(error: Rejected) -> bool:
    """Whether ``error`` refuses a request for its size (HTTP 413, or a message that says so)."""
    return error.status == 413 or _SIZE_REFUSAL.search(str(error)) is not None


Part = TypeVar("Part", bound=Sized)


def isolate(
    whole: Part,
    refusal: Rejected,
    *,
    halves: Callable[[Part], tuple[Part, Part]],
    probe: Callable[[Part, Rejected], object],
    may_go_on: Callable[[Part, Rejected], bool],
) -> None:
    """Split ``whole``, refused with ``refusal``, until each refused row has been sent alone.

    ``probe(part, known)`` sends ``part`` whole and returns its ``Rejected``, ``ACCEPTED``, or
    ``GONE`` (failed for another reason, or not sent); ``known`` is the refusal to quote if it
    cannot be sent."""
    stack: list[tuple[Part, Rejected]] = [(whole, refusal)]
    while stack:
        node, known = stack.pop()
        if not may_go_on(node, known):
            continue
        left, right = halves(node)
        left_result = probe(left, known)
        if left_result is ACCEPTED:
            if len(right) > 1 and not refuses_size(known):
                stack.append((right, known))  # its twin was accepted: right holds the refused row
                continue
            right_result = probe(right, known)  # a single row, or a half that may fit where the whole did not
        else:
            right_result = probe(right, left_result if isinstance(left_result, Rejected) else known)
        for part, result in ((right, right_result), (left, left_result)):  # left is popped first
            if isinstance(result, Rejected) and len(part) > 1:
                stack.append((part, result))
