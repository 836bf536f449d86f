"""The engine contract (accountant.engine.Engine): every engine kind, built directly or forced
through EngineConfig, gives certified tails that contain an independent brute-force value and
overlap each other, and either meets its targets or says so in its diagnostics.

The reference is computed here from scratch: the lattice weights b_k = L·s_k/σ_k² (L the
smallest scale making them coprime integers) and the exact law of Y = Σ_k b_k X_k by direct
convolution of discrete Gaussian pmfs in mpmath — no code of accountant/ is used for it.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction as F

import mpmath
import pytest

from accountant import Composition, DiscreteGaussian
from accountant.choose import make_engine
from accountant.coarse import CoarseEngine
from accountant.engine import Engine, EngineConfig, EngineDiagnostics, LatticeGroup
from accountant.pmf import PmfEngine
from accountant.quadrature import TailEngine, workprec
from accountant.split import SplitEngine

DPS = 60
#: the reference's own error: each pmf is truncated where its terms drop below ~e^{-130}.
SLACK = mpmath.mpf("1e-45")
TARGET = 1e-30

#: small compositions as (σ², shift, multiplicity); one has a shift-2 component, one a
#: lattice-like σ² = 1/2.
CASES = {
    "two": [(F(3, 2), 1, 2), (F(5, 2), 1, 1)],
    "three-shift2": [(F(3, 4), 1, 1), (F(5, 4), 2, 1), (F(2), 1, 2)],
    "shift2-small-sigma": [(F(1, 2), 2, 1), (F(3), 1, 3)],
}


# ---------------------------------------------------------------- independent reference
def _weights(spec) -> list[int]:
    """b_k = L·s_k/σ_k², coprime positive integers."""
    ws = [F(s) / s2 for s2, s, _ in spec]
    scale = F(math.lcm(*(w.denominator for w in ws)), math.gcd(*(w.numerator for w in ws)))
    bs = [int(w * scale) for w in ws]
    assert math.gcd(*bs) == 1
    return bs


def _dg_pmf(s2: F) -> dict[int, mpmath.mpf]:
    """pmf of N_Z(0, σ²) on |x| ≤ R, R with e^{−R²/(2σ²)} < e^{−130}."""
    v = mpmath.mpf(s2.numerator) / s2.denominator
    r = int(math.sqrt(260 * float(s2))) + 2
    w = {x: mpmath.exp(-mpmath.mpf(x * x) / (2 * v)) for x in range(-r, r + 1)}
    z = mpmath.fsum(w.values())
    return {x: p / z for x, p in w.items()}


@functools.cache
def _law(name: str) -> dict[int, mpmath.mpf]:
    """The law of Y = Σ b_k X_k (m_k copies each) by direct convolution."""
    spec = CASES[name]
    with mpmath.workdps(DPS):
        dist = {0: mpmath.mpf(1)}
        for (s2, _, m), b in zip(spec, _weights(spec)):
            base = _dg_pmf(s2)
            for _ in range(m):
                new: dict[int, mpmath.mpf] = {}
                for y, p in dist.items():
                    for x, q in base.items():
                        new[y + b * x] = new.get(y + b * x, 0) + p * q
                dist = new
        return dist


def _tail(name: str, k: int) -> mpmath.mpf:
    with mpmath.workdps(DPS):
        return mpmath.fsum(p for y, p in _law(name).items() if y >= k)


# ---------------------------------------------------------------- the engines
def _groups(name: str) -> tuple[LatticeGroup, ...]:
    spec = CASES[name]
    return tuple(LatticeGroup(s2, b, m) for (s2, _, m), b in zip(spec, _weights(spec)))


def _split(groups, u_kind, v_kind) -> SplitEngine:
    """Y = d_A·U + d_B·V with U the first component, V the others (exact for any partition)."""
    a, rest = groups[0], groups[1:]
    d_a, d_b = a.b, math.gcd(*(g.b for g in rest))
    u = (LatticeGroup(a.sigma2, 1, a.mult),)
    v = tuple(LatticeGroup(g.sigma2, g.b // d_b, g.mult) for g in rest)
    v_u = F(a.mult) * a.sigma2
    return SplitEngine(u_kind(u), v_kind(v), d_a, d_b, v_u)


ENGINES = {
    "trapezoid": TailEngine,
    "pmf": PmfEngine,
    "split": lambda g: _split(g, PmfEngine, TailEngine),
    "coarse": lambda g: CoarseEngine.build(g, make_engine, divisor=2),
}


def _ks(name: str) -> list[int]:
    sd = math.sqrt(sum(g.mult * g.b * g.b * float(g.sigma2) for g in _groups(name)))
    return sorted({round(x * sd) for x in (-2, 0, 0.5, 2, 5, 8)} | {1})


@functools.cache
def _run(name: str, kind: str):
    engine = ENGINES[kind](_groups(name))
    ks = _ks(name)
    return engine, ks, engine.tails(ks, [TARGET] * len(ks))


@pytest.mark.parametrize("kind", sorted(ENGINES))
@pytest.mark.parametrize("name", sorted(CASES))
def test_engine_tails_contain_the_convolution_and_meet_or_flag_the_target(name, kind):
    engine, ks, tails = _run(name, kind)
    assert isinstance(engine, Engine) and engine.name == kind
    assert engine.var > 0 and engine.v_sg > 0
    for k, c in zip(ks, tails):
        ref = _tail(name, k)
        assert c.lower - SLACK <= ref <= c.upper + SLACK, (name, kind, k, c, ref)
    diag = engine.diagnostics()
    assert isinstance(diag, EngineDiagnostics)
    assert diag.engine == kind and diag.thresholds == len(ks) and diag.batches == 1
    assert diag.improvable == engine.improvable
    met = all(c.error <= TARGET for c in tails)
    assert diag.tolerance_met is met  # meets the target, or flags the miss
    if engine.improvable:  # the exact engines meet it
        assert met, (name, kind, [float(c.error) for c in tails])
    else:
        assert kind == "coarse"
    if kind == "split":
        assert [p.engine for p in diag.parts] == ["pmf", "trapezoid"]
        assert all(p.tolerance_met is None for p in diag.parts)  # parts are not assessed
    if kind == "coarse":
        assert len(diag.parts) == 1 and diag.parts[0].engine in ("pmf", "trapezoid")


@pytest.mark.parametrize("name", sorted(CASES))
def test_engines_overlap_each_other(name):
    ks = _ks(name)
    runs = {kind: _run(name, kind)[2] for kind in ENGINES}
    for i, k in enumerate(ks):
        lo = max(r[i].lower for r in runs.values())
        hi = min(r[i].upper for r in runs.values())
        assert lo <= hi + SLACK, (name, k, {kind: str(r[i]) for kind, r in runs.items()})


def _exact(x) -> mpmath.mpf:
    """An exact Arb point (lower()/upper() of a ball) as an mpf (exact: enough precision)."""
    man, exp = x.mid().man_exp()
    with mpmath.workprec(max(64, int(man).bit_length() + 8)):
        return +mpmath.mpf((int(man), int(exp)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_ball_tails_contain_the_convolution(name):
    """tails_ball (what a split asks of its parts) is provided by every kind and encloses the
    same values as tails."""
    ks = _ks(name)
    for kind in ENGINES:
        engine = _run(name, kind)[0]
        with workprec(256):
            balls = engine.tails_ball(ks, [TARGET] * len(ks))
            ends = [(_exact(b.lower()), _exact(b.upper())) for b in balls]
        for k, (lo, hi) in zip(ks, ends):
            ref = _tail(name, k)
            with mpmath.workdps(DPS):
                assert lo - SLACK <= ref <= hi + SLACK, (name, kind, k, lo, hi, ref)


@pytest.mark.parametrize(
    "kind, config",
    [
        ("trapezoid", EngineConfig(direct_pmf_max_span=0)),
        ("pmf", EngineConfig(direct_pmf_max_span=10**7)),
    ],
)
@pytest.mark.parametrize("name", sorted(CASES))
def test_composition_forced_by_config_carries_its_diagnostics(name, kind, config):
    """A Composition with an EngineConfig uses the forced engine, and every result says so."""
    spec = CASES[name]
    comp = Composition({DiscreteGaussian(s2, shift=s): m for s2, s, m in spec}, config=config)
    mine = dict(zip(((s2, s) for s2, s, _ in spec), _weights(spec)))
    assert [mine[(d.sigma2, d.shift)] for d, _ in comp.groups] == list(comp.lattice.weights)
    assert comp._engine.name == kind and comp.config is config
    ks = _ks(name)
    for k, c in zip(ks, comp.tails(ks, tol=TARGET, rtol=1e-15)):
        ref = _tail(name, k)
        assert c.lower - SLACK <= ref <= c.upper + SLACK, (name, kind, k, c, ref)
        assert c.tolerance_met
        assert c.diagnostics.engine == kind and c.diagnostics.tolerance_met and not c.diagnostics.fallback
    assert comp.stats == comp._engine.stats  # the engine's own stats stay reachable
    assert comp.stats.n_nodes == c.diagnostics.n_nodes  # (the last batch)
