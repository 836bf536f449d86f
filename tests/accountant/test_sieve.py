"""The window sieve (accountant.sieve.sieve_nodes) against its definition, node by node."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.sieve import MAX_COVERAGE, SieveComponent, SieveTooWide, sieve_count, sieve_nodes


def kept_by_definition(components, n_nodes: int) -> np.ndarray:
    """Nodes j ∈ [0, N/2] with, for every sieving component, |θ − 2πp| ≤ half-width for some
    integer p, θ = b·2πj/N — i.e. the distance of b·j/N to the nearest integer is at most
    halfwidth/(2π) (in exact rationals, widened by the sieve's float slack 1e-9 relative)."""
    half = n_nodes // 2
    usable = [c for c in components if c.halfwidth / math.pi <= MAX_COVERAGE]
    out = []
    for j in range(half + 1):
        ok = True
        for c in usable:
            r = (c.b * j) % n_nodes
            dist = min(r, n_nodes - r) / n_nodes  # distance of b·j/N to Z
            if dist > c.halfwidth / (2 * math.pi) * (1 + 1e-9):
                ok = False
                break
        if ok:
            out.append(j)
    return np.array(out, dtype=np.int64)


components = st.lists(st.builds(SieveComponent, st.integers(1, 5000), st.floats(1e-3, 2.0)), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(comps=components, n_nodes=st.integers(8, 3000))
def test_sieve_keeps_every_node_in_every_window_and_nothing_far(comps, n_nodes):
    got = set(sieve_nodes(comps, n_nodes).tolist())
    want = set(kept_by_definition(comps, n_nodes).tolist())
    assert want <= got  # never drops a node of every window (soundness of the pruning)
    # and keeps nothing outside the windows widened by the float slack (1e-9 of N): recheck
    # the extras with a wider tolerance
    wide = [SieveComponent(c.b, c.halfwidth + 2 * math.pi * (1e-9 + 1e-12 * n_nodes)) for c in comps]
    assert got <= set(kept_by_definition(wide, n_nodes).tolist())


def test_sieve_refuses_too_many_windows_before_building_them():
    # a single component with 10⁹ peaks on a 2·10⁹-node circle: refused, not enumerated
    with pytest.raises(SieveTooWide):
        sieve_nodes([SieveComponent(10**9, 0.5)], 2 * 10**9, max_kept=1000)


@settings(max_examples=60, deadline=None)
@given(comps=components, n_nodes=st.integers(8, 3000))
def test_sieve_count_is_the_number_of_kept_nodes(comps, n_nodes):
    """The planner's count (accountant.sieve.sieve_count: windows summed, nothing listed) is
    len(sieve_nodes) — the same decisions are taken from it as from the list."""
    n = len(sieve_nodes(comps, n_nodes))
    assert sieve_count(comps, n_nodes) == n
    # stopped early: "at most T?" answered as by the full count, and the count itself when above T
    for t in (0, n // 2, n, n + 1, n_nodes):
        bound = sieve_count(comps, n_nodes, stop_at=t)
        assert (bound <= t) == (n <= t)
        assert bound == n if bound > t else n <= bound
