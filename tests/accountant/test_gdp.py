"""Tests for accountant.gdp (μ-GDP surrogate, arXiv 1905.02383, and its Edgeworth correction)."""

from fractions import Fraction

import mpmath
import pytest

from accountant import DiscreteGaussian, gdp

DHC_PERSONS_RHO = Fraction(24811, 5000)  # docs/method.md §1.1
#: δ_GDP at ε_BS(1e-10) for μ² = 2ρ, from docs/method.md §2 (10 significant digits quoted).
NOTE_GDP_DELTA = mpmath.mpf("1.783199339e-12")
#: The note quotes 10 digits, so agreement within half a unit of the 10th digit.
NOTE_REL_TOL = mpmath.mpf("5e-10")
#: Results carry ~dps = 50 digits; comparisons against a 300-digit reference allow 5 lost digits.
HIGH_PREC_REL_TOL = mpmath.mpf("1e-45")
#: Large-σ² compositions: κ₂ = μ² and κ₄ = 0 up to e^{−2π²σ²} < 1e-270, so only rounding remains.
LARGE_SIGMA_REL_TOL = mpmath.mpf("1e-40")
#: Independent direct / theta-dual cumulant formulas agree to working precision (~50 digits).
CUMULANT_TOL = mpmath.mpf("1e-45")
#: Lattice Edgeworth vs brute force at σ² = 1/2, m = 20: measured ≤ 1e-4 relative down to δ ~ 4e-2
#: (the omitted terms are O(m^{-2}) with a large sixth cumulant at σ² = 1/2).
LATTICE_EDGEWORTH_REL_TOL = mpmath.mpf("2e-4")
#: Continuous trade-off surrogate on the coarse σ² = 1/2, m = 20 lattice (span 2 vs sd 6.3):
#: lattice error of relative order (h z/√κ₂)² ~ 0.1 (measured ≤ 0.11 at these α).
COARSE_LATTICE_TRADEOFF_REL_TOL = mpmath.mpf("0.2")
#: gdp.epsilon nudges ε up by 1e-42 relative; δ's elasticity d ln δ/d ln ε is ≲ 1e4 here.
EPS_INVERSE_REL_TOL = mpmath.mpf("1e-35")


def hp(text):
    with mpmath.workdps(60):
        return mpmath.mpf(text)


def rel(a, b):
    with mpmath.workdps(60):
        return abs(mpmath.mpf(a) / mpmath.mpf(b) - 1)


def census_like():
    """A DHC-like composition (σ² = 1/ρ_q ≥ 10): GDP is essentially exact for it."""
    return [DiscreteGaussian.from_rho(r) for r in ["73/10000", "11/10000", "999/10000", "31/1000"] * 10]


def brute_pmf(sigma2, m):
    """Exact pmf of Y = X_1 + … + X_m, X_k ~ N_Z(0, σ²), by convolution (truncation < 1e-60)."""
    with mpmath.workdps(60):
        s2 = Fraction(sigma2)
        t = mpmath.mpf(s2.denominator) / (2 * s2.numerator)
        k = int(mpmath.sqrt(140 * 2 * s2)) + 2  # e^{−k²/(2σ²)} < 1e-60
        p = [mpmath.exp(-t * x * x) for x in range(-k, k + 1)]
        z = mpmath.fsum(p)
        p = [v / z for v in p]
        dist = [mpmath.mpf(1)]
        for _ in range(m):
            new = [mpmath.mpf(0)] * (len(dist) + len(p) - 1)
            for i, a in enumerate(dist):
                for j, b in enumerate(p):
                    new[i + j] += a * b
            dist = new
        return dist, m * k  # dist[i] = P[Y = i − offset]


@pytest.fixture(scope="module")
def small_sigma_case():
    sigma2, m = Fraction(1, 2), 20
    dist, offset = brute_pmf(sigma2, m)
    return [DiscreteGaussian(sigma2)] * m, dist, offset, Fraction(1) / sigma2, m / (2 * sigma2)


def brute_delta(dist, offset, w, rho, eps):
    """Exact δ(ε) = E_P[(1 − e^{ε − L})₊], L = ρ + wY (equals P[L_P>ε] − e^ε P[L_Q>ε])."""
    with mpmath.workdps(60):
        e, r, ww = mpmath.mpf(eps), mpmath.mpf(rho), mpmath.mpf(w)
        return mpmath.fsum(
            p * (1 - mpmath.exp(e - r - ww * (i - offset))) for i, p in enumerate(dist) if r + ww * (i - offset) > e
        )


def brute_tradeoff(dist, offset, c, alpha):
    """Exact Neyman–Pearson β(α) for L = w(Y ± c), c = ρ/w ∈ Z, randomised between atoms."""
    with mpmath.workdps(60):
        n = len(dist)
        upper = [mpmath.mpf(0)] * (n + 1)  # upper[i] = P[Y ≥ i − offset]
        for i in range(n - 1, -1, -1):
            upper[i] = upper[i + 1] + dist[i]

        def ge(y):  # P[Y ≥ y]
            i = y + offset
            return mpmath.mpf(1) if i <= 0 else (mpmath.mpf(0) if i >= n else upper[i])

        a = mpmath.mpf(alpha)
        k = -offset - c - 1
        while ge(k + 1 + c) > a:  # reject {Y_Q-index ≥ k}: α_k = P[Y ≥ k + c]
            k += 1
        a_hi, a_lo = ge(k + c), ge(k + 1 + c)
        b_hi, b_lo = 1 - ge(k - c), 1 - ge(k + 1 - c)  # β_k = P[Y < k − c]
        lam = (a_hi - a) / (a_hi - a_lo)
        return b_hi + lam * (b_lo - b_hi)


# ---------------------------------------------------------------------------------------------


def test_mu_of_lists_mappings_and_groups():
    a, b = DiscreteGaussian.from_rho("73/10000"), DiscreteGaussian("1/2")
    assert gdp.mu2_of([a, b, b]) == Fraction(73, 10000) + 4
    assert gdp.mu2_of({a: 1, b: 2}) == Fraction(73, 10000) + 4

    class FakeComposition:
        groups = ((a, 1), (b, 2))

    assert gdp.mu2_of(FakeComposition()) == Fraction(73, 10000) + 4
    with mpmath.workdps(60):
        assert rel(gdp.mu_of([b]), mpmath.sqrt(2)) < HIGH_PREC_REL_TOL


def test_delta_matches_method_note():
    # one unit-shift DG with σ² = 1/(2ρ) has μ² = 2ρ, the whole DHC pair's μ² (docs/method.md §2)
    assert gdp.mu2_of([DiscreteGaussian.from_rho(2 * DHC_PERSONS_RHO)]) == 2 * DHC_PERSONS_RHO
    with mpmath.workdps(60):
        mu = mpmath.sqrt(2 * mpmath.mpf(24811) / 5000)
    d = gdp.delta(mu, "26.340588852722324")
    assert rel(d, NOTE_GDP_DELTA) < NOTE_REL_TOL


@pytest.mark.parametrize("mu,eps", [("3.15", "26.34"), (1, 40), ("0.5", 200), (10, 300), ("3.15", -2)])
def test_delta_high_precision_tiny_values(mu, eps):
    with mpmath.workdps(300):  # brute-force reference: enough digits to absorb any cancellation
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        ref = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
    got = gdp.delta(mu, eps)
    assert rel(got, ref) < HIGH_PREC_REL_TOL, (mu, eps, got, ref)


def test_delta_reaches_1e_minus_100_and_epsilon_inverts_it():
    mu = "3.15"
    for target in ["1e-10", "1e-50", "1e-100", "0.3"]:
        eps = gdp.epsilon(mu, target)
        d = gdp.delta(mu, eps)
        assert d <= hp(target)  # conservative side
        assert rel(d, hp(target)) < EPS_INVERSE_REL_TOL
    assert gdp.epsilon(mu, "0.999") == 0  # δ(0) = 2Φ(μ/2) − 1 < 0.999 already


def test_tradeoff_symmetric_and_dual_to_delta():
    mu = hp("3.15")
    for alpha in ["1e-30", "1e-5", "0.05", "0.5", "0.9"]:
        beta = gdp.tradeoff(mu, alpha)
        assert rel(gdp.tradeoff(mu, beta), hp(alpha)) < HIGH_PREC_REL_TOL  # G_μ is symmetric
    # δ(ε) = 1 − min_α (e^ε α + G_μ(α)), attained at α* = Φ(−ε/μ − μ/2) (arXiv 1905.02383, Prop 2.12)
    with mpmath.workdps(60):
        eps = mpmath.mpf(5)
        a_star = mpmath.ncdf(-eps / mu - mu / 2)
        via_tradeoff = 1 - mpmath.exp(eps) * a_star - gdp.tradeoff(mu, a_star)
        assert rel(via_tradeoff, gdp.delta(mu, eps)) < HIGH_PREC_REL_TOL
    assert gdp.tradeoff(mu, 0) == 1 and gdp.tradeoff(mu, 1) == 0


def test_bad_inputs():
    for bad in [0, -1, float("nan"), "nan"]:
        with pytest.raises(ValueError, match="mu"):
            gdp.delta(bad, 1)
    with pytest.raises(ValueError, match="eps"):
        gdp.delta(1, float("inf"))
    for bad in [0, 1, 2, float("nan")]:
        with pytest.raises(ValueError, match="delta"):
            gdp.epsilon(1, bad)
    for bad in [-0.1, 1.1, float("nan")]:
        with pytest.raises(ValueError, match="alpha"):
            gdp.tradeoff(1, bad)


@pytest.mark.parametrize("sigma2", ["1/2", "1", "3/2", "2"])
def test_cumulants_direct_equals_theta_dual(sigma2):
    d2, d4 = gdp.discrete_gaussian_cumulants(sigma2, method="direct")
    t2, t4 = gdp.discrete_gaussian_cumulants(sigma2, method="dual")
    assert abs(d2 - t2) < CUMULANT_TOL and abs(d4 - t4) < CUMULANT_TOL
    assert 0 < d2 < Fraction(sigma2)  # Var N_Z(0, σ²) < σ² (arXiv 2004.00010)


def test_cumulants_large_sigma_asymptotics():
    # κ₄ ≈ 2q(π²/t²)², q = e^{−π²/t}, t = 1/(2σ²): leading theta-dual term, corrections O(q).
    with mpmath.workdps(60):
        t = mpmath.mpf(1) / 10
        lead = 2 * mpmath.exp(-(mpmath.pi**2) / t) * (mpmath.pi**2 / t**2) ** 2
        k2, k4 = gdp.discrete_gaussian_cumulants(5)
        assert rel(k4, lead) < mpmath.mpf("1e-30")
        assert abs(k2 - 5) < mpmath.mpf("1e-35")


@pytest.mark.parametrize("lattice", [None, False])
def test_edgeworth_equals_gdp_for_large_sigma(lattice):
    comp = census_like()
    mu = gdp.mu_of(comp)
    for eps in [1, 5, 10]:
        assert rel(gdp.edgeworth_delta(comp, eps, lattice=lattice), gdp.delta(mu, eps)) < LARGE_SIGMA_REL_TOL
    for alpha in ["1e-6", "0.05", "0.5"]:
        assert rel(gdp.edgeworth_tradeoff(comp, alpha), gdp.tradeoff(mu, alpha)) < LARGE_SIGMA_REL_TOL


def test_edgeworth_beats_gdp_for_small_sigma(small_sigma_case):
    comp, dist, offset, w, rho = small_sigma_case
    mu = gdp.mu_of(comp)
    for eps in [5, 10, 20, 30]:
        exact = brute_delta(dist, offset, w, rho, eps)
        err_gdp = rel(gdp.delta(mu, eps), exact)
        err_cont = rel(gdp.edgeworth_delta(comp, eps, lattice=False), exact)
        err_lat = rel(gdp.edgeworth_delta(comp, eps), exact)  # auto → lattice sum here
        assert err_cont < err_gdp, (eps, err_cont, err_gdp)
        assert err_lat < err_cont and err_lat < LATTICE_EDGEWORTH_REL_TOL, (eps, err_lat)


def test_edgeworth_tradeoff_symmetric_and_near_exact(small_sigma_case):
    # The continuous trade-off surrogate does not model the randomised lattice curve, so for this
    # coarse lattice it is NOT reliably closer than GDP (documented limitation); check symmetry
    # and that it stays within the lattice-order error of the exact curve.
    comp, dist, offset, w, rho = small_sigma_case
    for alpha in ["1e-4", "0.01", "0.1"]:
        beta = gdp.edgeworth_tradeoff(comp, alpha)
        assert rel(gdp.edgeworth_tradeoff(comp, beta), hp(alpha)) < HIGH_PREC_REL_TOL
        exact = brute_tradeoff(dist, offset, int(rho / w), hp(alpha))
        assert rel(beta, exact) < COARSE_LATTICE_TRADEOFF_REL_TOL, (alpha, beta, exact)


def test_lattice_span():
    assert gdp.loss_lattice_span([DiscreteGaussian.from_rho("73/10000"), DiscreteGaussian.from_rho("11/10000")]) == (
        Fraction(1, 10000)
    )
