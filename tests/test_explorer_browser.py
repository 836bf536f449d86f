"""Issue 16 must-show 1 (in part): the explorer page in a real headless Chromium (Debian ``chromium``
and ``chromium-driver``, installed by ``make browser``; Selenium drives the system browser): load
the page, move a geolevel's slider, wait for the new exact δ, and check it equals the accountant's
``Composition.delta`` of that allocation to the digits shown. A screenshot is kept as a test artefact."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from accountant import Composition, DiscreteGaussian
from accountant.decimals import decimal_string
from explorer.app import create_app, start_server
from optimizer.scenario import load_scenario
from optimizer.search import target_from_allocation
from optimizer.search.proxy import _full_path_rho, mpf_to_fraction

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"
pytestmark = pytest.mark.skipif(
    not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()),
    reason="headless Chromium not installed (make browser: apt-get install chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    sc = load_scenario("dhc-persons")
    server, _ = start_server(create_app(sc), "127.0.0.1", 0)
    opts = Options()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1280,1400",
        "--disable-dev-shm-usage",
    ):
        opts.add_argument(arg)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('profile')}")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        driver.get(f"http://127.0.0.1:{server.server_port}/")
        yield sc, driver
    finally:
        driver.quit()
        server.shutdown()


def _text(driver, element_id: str) -> str:
    """The element's text ("" when absent); the panel is re-rendered on every move, so an element
    replaced between finding and reading it is found again."""
    for _ in range(20):
        try:
            found = driver.find_elements(By.ID, element_id)
            return found[0].text.strip() if found else ""
        except StaleElementReferenceException:
            continue
    return ""


def _expected_delta(sc, factors_text: str) -> tuple[str, str]:
    """The certified δ at the promised ε of the allocation the page names, from the accountant
    directly (the proxy pair: the full spine path's budgets, each measurement twice)."""
    base = sc.load_allocation()
    factors = {g: Fraction(f) for g, f in (item.split("=") for item in factors_text.split(", "))}
    new = base.with_rho({(g, q): r * factors[g] for g, q, r in base.items()})
    promise = target_from_allocation(base, delta=sc.target_delta_text, conversion=sc.conversion)
    counts: dict[Fraction, int] = {}
    for r in _full_path_rho(new):
        counts[r] = counts.get(r, 0) + 2
    comp = Composition({DiscreteGaussian(1 / r): n for r, n in counts.items()})
    d = comp.delta(promise.epsilon, tol=1e-35, rtol=1e-12)
    return decimal_string(mpf_to_fraction(d.upper), 12, "up"), decimal_string(mpf_to_fraction(d.lower), 12, "down")


def test_moving_a_slider_shows_the_accountants_delta(page):
    sc, driver = page
    wait = WebDriverWait(driver, 60)
    wait.until(lambda d: re.match(r"\d", _text(d, "exact-delta")))
    first, first_factors = _text(driver, "exact-delta"), _text(driver, "factors")
    assert "Block=1" in first_factors and _text(driver, "badge") == "promise kept on the proxy pair"
    assert (first, _text(driver, "exact-delta-lower")) == _expected_delta(sc, first_factors)
    handles = driver.find_elements(By.CSS_SELECTOR, '[role="slider"]')
    assert len(handles) == len(sc.load_allocation().geolevels)
    handles[-1].click()  # the Block slider (the last geolevel)
    for _ in range(10):
        handles[-1].send_keys(Keys.ARROW_RIGHT)
    wait.until(lambda d: _text(d, "factors") != first_factors and re.match(r"\d", _text(d, "exact-delta")))
    wait.until(lambda d: _text(d, "exact-delta") != first)
    factors = _text(driver, "factors")
    assert re.search(r"Block=(\d+/\d+|\d+)", factors) and "Block=1," not in factors + ","
    shown = (_text(driver, "exact-delta"), _text(driver, "exact-delta-lower"))
    assert shown == _expected_delta(sc, factors)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / "explorer.png"))
    assert (ARTIFACTS / "explorer.png").stat().st_size > 10_000


@pytest.fixture(scope="module")
def toy_page(tmp_path_factory):
    from tests.toy_scenario import TOY_ALLOC, TOY_SCENARIO

    d = tmp_path_factory.mktemp("toy")
    (d / "alloc.toml").write_text(TOY_ALLOC)
    (d / "toy.toml").write_text(TOY_SCENARIO)
    sc = load_scenario(d / "toy.toml")
    server, _ = start_server(create_app(sc, certify_root=d / "certify", workers=1), "127.0.0.1", 0)
    opts = Options()
    opts.binary_location = str(CHROMIUM)
    args = ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1400", "--disable-dev-shm-usage")
    for arg in args:
        opts.add_argument(arg)
    opts.add_argument(f"--user-data-dir={d / 'profile'}")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        driver.get(f"http://127.0.0.1:{server.server_port}/")
        yield sc, driver, d
    finally:
        driver.quit()
        server.shutdown()


def test_certify_runs_on_all_pairs_and_a_certified_setting_is_remembered(toy_page):
    """Issue 16: "Certify on all pairs" on a reduced allocation (the toy: 3 pairs) runs the all-pairs
    confirmation in the background and shows its verdict, equal to optimizer.jobs.confirm run here;
    moving away and back shows the stored verdict without running again."""
    from optimizer.jobs.confirm import confirm

    sc, driver, d = toy_page
    wait = WebDriverWait(driver, 60)
    wait.until(lambda dr: re.match(r"\d", _text(dr, "exact-delta")))
    assert _text(driver, "certify-status") == "not certified on all pairs yet"
    driver.find_element(By.ID, "certify").click()
    wait.until(lambda dr: _text(dr, "certify-status").startswith("confirmed on all"))
    shown = _text(driver, "certify-status")
    base = sc.load_allocation()
    promise = target_from_allocation(base, delta=sc.target_delta_text, conversion=sc.conversion)
    conf = confirm(base, promise, cache_dir=d / "independent", workers=1, max_rounds=1, progress=False)
    top = decimal_string(mpf_to_fraction(conf.worst_delta.upper), 6, "up")
    assert conf.passed and shown == (
        f"confirmed on all {conf.n_pairs} pairs (largest δ ≤ {top}, pair [{conf.worst_pair[0]}, {conf.worst_pair[1]}])"
    )
    handle = driver.find_elements(By.CSS_SELECTOR, '[role="slider"]')[-1]
    handle.click()
    handle.send_keys(Keys.ARROW_RIGHT)
    wait.until(lambda dr: _text(dr, "certify-status") == "not certified on all pairs yet")
    handle.send_keys(Keys.ARROW_LEFT)
    wait.until(lambda dr: _text(dr, "certify-status") == shown)  # remembered: no second run
