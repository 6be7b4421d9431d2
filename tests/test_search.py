"""The search for the fewest replicas (planner.serving.search.fewest) on made-up runs whose
answer is known: a count meets the targets exactly when it is at least ``k``, and its miss ratio
is linear in the load one replica carries (``load ÷ load at k``), as the search assumes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from planner.serving.search import fewest, load


def made_up(k: int, users: int | None) -> tuple[list[int], Callable[[int], tuple[bool, float]]]:
    """A run at each count: met when count ≥ k, miss ratio the load over the load at ``k``
    (closed loop of ``users``: users per replica; open loop: 1/R). Returns the counts run, in
    order, and the trial."""
    tried: list[int] = []
    edge = load(k, users)

    def trial(count: int) -> tuple[bool, float]:
        tried.append(count)
        return count >= k, load(count, users) / edge * 0.999

    return tried, trial


#: (k, start, users): the fewest count, where the search starts, the closed loop's users (None:
#: an open loop).
CASES = [
    (1, 1, None),
    (2, 1, None),
    (3, 1, None),
    (7, 5, None),
    (7, 9, None),
    (40, 8, None),
    (2, 1, 64),
    (26, 8, 2048),
    (35, 9, 2048),
    (5, 30, 2048),
]


@pytest.mark.parametrize(("k", "start", "users"), CASES)
@pytest.mark.parametrize("best", [0.05, None])
def test_the_search_ends_on_the_fewest_count_next_to_one_that_misses(
    k: int, start: int, users: int | None, best: float | None
) -> None:
    """With the best case's miss ratio (one request at a time, far inside every target) or
    without it, the search ends on k and k − 1, having run both."""
    tried, trial = made_up(k, users)
    assert fewest(trial, start, 10_000, users, best) == (k - 1, k)
    assert k in tried and (k == 1 or k - 1 in tried)
    assert len(tried) == len(set(tried))  # no count run twice


def test_a_search_that_reaches_its_limit_says_so() -> None:
    tried, trial = made_up(50, None)
    assert fewest(trial, 4, 20, None, 0.05) == (20, None)
    assert tried[-1] == 20
