"""The one walk that finds exactly the rows a server refuses in a request it refused whole.

Shared by the upsert engine (rows) and the embedding client (texts), which send, count and account
for each probe their own way. The rule: depth first, left before right (input order), so memory is
one path of halves. Each entry holds (or, when its twin was accepted, must hold) a refused row, with
the last refusal seen above it for messages. A half is sent whole only when nothing says it is
refused; a single row is always sent, so no row is blamed by inference. ``may_go_on`` is asked
before each split and may fail the part itself (a budget spent, a stopped write), which ends that
branch.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import TypeVar

from .errors import Rejected

__all__ = ["ACCEPTED", "GONE", "isolate"]

ACCEPTED, GONE = object(), object()  # what a probe came to, besides a refusal

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
            if len(right) > 1:
                stack.append((right, known))  # its twin was accepted: right holds the refused row
                continue
            right_result = probe(right, known)
        else:
            right_result = probe(right, left_result if isinstance(left_result, Rejected) else known)
        for part, result in ((right, right_result), (left, left_result)):  # left is popped first
            if isinstance(result, Rejected) and len(part) > 1:
                stack.append((part, result))
