"""``ForkCheck``: what an object makes anew in a forked child is made once, by its first thread there."""

from __future__ import annotations

import threading
import time

import pytest

from tests.forks import in_forked_child
from vectordb.connector.forks import ForkCheck


def test_in_the_process_it_was_made_in_nothing_is_reset() -> None:
    resets: list[int] = []
    check = ForkCheck()
    for _ in range(3):
        check.once_per_process(lambda: resets.append(1))
    assert resets == []


def test_in_a_forked_child_two_threads_that_come_first_at_once_reset_once_and_both_wait_for_it() -> None:
    """Both threads of the child see the parent's pid; the first resets (slowly), the second must wait
    for that reset, not make its own beside it (it would replace the lock or connection the first made)."""
    check = ForkCheck()

    def child() -> str:
        resets: list[float] = []
        returned: list[float] = []
        arrive = threading.Barrier(2)

        def reset() -> None:
            time.sleep(0.2)  # the other thread arrives meanwhile
            resets.append(time.monotonic())

        def use() -> None:
            arrive.wait()
            check.once_per_process(reset)
            returned.append(time.monotonic())

        threads = [threading.Thread(target=use) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        check.once_per_process(reset)  # reset for this process already: nothing more
        return f"{len(resets)} {all(t >= resets[0] for t in returned)}"

    assert in_forked_child(child) == "1 True"


def test_a_reset_that_raises_is_tried_again_by_the_next_caller() -> None:
    check = ForkCheck()

    def child() -> str:
        tries: list[int] = []

        def reset() -> None:
            tries.append(1)
            if len(tries) == 1:
                raise OSError("no file descriptor left")

        with pytest.raises(OSError, match="no file descriptor left"):
            check.once_per_process(reset)
        check.once_per_process(reset)
        check.once_per_process(reset)
        return str(len(tries))

    assert in_forked_child(child) == "2"
