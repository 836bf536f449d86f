"""The budget explorer's latency, measured in the browser (issue 16 must-show 2).

    python -m bench.explorer [--scenario dhc-persons] [--moves 50] [--out reports/benchmarks/explorer.csv]

Starts the explorer (``census-plb explore --port 0``, in its own process as a user runs it) on a free
loopback port, opens it in headless Chromium
(Selenium with the system ``chromium-driver``) and makes ``--moves`` slider moves (one arrow key on a
geolevel's slider — a step of ×1.12 — cycling through the geolevels, each going up five steps from 1×
and back). Per move it records the
time, measured in the page (``performance.now()``), from the slider's value change to the new
numbers in the panel (the driver waits inside the page, by one asynchronous script, instead of polling),
the same seen from the test driver (WebDriver round trips included), and the
accountant's own time the page reports (0 for a setting the page already keeps: moves back revisit
settings, so the summary gives first visits separately); then times "Certify on all pairs" for the scenario's own
allocation, cold and cached (``--no-certify`` skips it). Prints the median and p95 of both and writes one CSV row per
move plus a JSON summary next to it. Target (issue 16): p95 ≤ 150 ms on screen, ≤ 70 ms accountant.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time

from bench.output import write_results

COLUMNS = ["move", "geolevel", "key", "revisit", "screen_ms", "webdriver_ms", "accountant_ms", "factors"]
#: in the page: the time the slider's value changes (its aria-valuenow) and the time the panel shows
#: the new setting (the factor list's text), by performance.now() — no WebDriver round trip in it
#: the geolevel sliders' handles (not the per-query ones), as a CSS selector
GEOLEVEL_SLIDERS = '[id*=\'"type":"factor"\'] [role="slider"]'
_OBSERVE = """
const handle = document.querySelectorAll(arguments[1])[arguments[0]];
const factors = () => document.getElementById('factors');
window.__moved = null; window.__shown = null;
const before = factors() ? factors().textContent : '';
new MutationObserver((m, o) => { if (window.__moved === null) { window.__moved = performance.now(); o.disconnect(); } })
  .observe(handle, {attributes: true, attributeFilter: ['aria-valuenow']});
new MutationObserver((m, o) => {
  const f = factors();
  if (window.__moved !== null && f && f.textContent !== before) { window.__shown = performance.now(); o.disconnect(); }
}).observe(document.getElementById('panel'), {childList: true, subtree: true, characterData: true});
"""


#: resolves (in the page) with the milliseconds from the slider's change to the new numbers on screen
_WAIT_SHOWN = """
const done = arguments[arguments.length - 1];
(function poll() {
  if (window.__shown !== null) { done(window.__shown - window.__moved); } else { setTimeout(poll, 1); }
})();
"""


def _p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def _start_explorer(scenario: str) -> tuple[subprocess.Popen, str]:
    """``census-plb explore --scenario S --port 0`` in its own process, as a user runs it, and its address.

    Not a thread of this process: the driver's polling (every 2 ms) would then share the server's GIL and
    slow the accountant it measures (in one process the first visits' accountant time was ~35 % above
    the same settings' time with no browser; the page's own server never shares a process with a driver)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "optimizer.cli", "explore", "--scenario", scenario, "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "census-plb explorer for S: http://127.0.0.1:PORT/  (Ctrl-C stops it)"
    found = re.search(r"(http://\S+/)", line)
    if found is None:
        proc.terminate()
        raise RuntimeError(f"census-plb explore did not print its address: {line!r}")
    return proc, found.group(1)


def measure(scenario: str, moves: int) -> list[dict]:
    """``moves`` slider moves in headless Chromium: one row per move (module docstring)."""
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from optimizer.scenario import load_scenario

    sc = load_scenario(scenario)
    server, url = _start_explorer(scenario)
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as profile:
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            opts.add_argument(arg)
        opts.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
        try:
            driver.get(url)
            wait = WebDriverWait(driver, 120, poll_frequency=0.05)
            driver.set_script_timeout(120)

            def text(i: str) -> str:
                for _ in range(20):  # the panel is re-rendered on every move: retry a replaced element
                    try:
                        found = driver.find_elements(By.ID, i)
                        return found[0].text if found else ""
                    except StaleElementReferenceException:
                        continue
                return ""

            wait.until(lambda d: re.match(r"\d", text("exact-delta")))
            names = list(sc.load_allocation().geolevels)
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, GEOLEVEL_SLIDERS)) == len(names))
            handles = driver.find_elements(By.CSS_SELECTOR, GEOLEVEL_SLIDERS)
            rows = []
            seen = {text("factors")}
            for k in range(moves):
                g = (k // 10) % len(handles)  # ten moves per geolevel: five up from 1×, five back
                key = Keys.ARROW_RIGHT if k % 10 < 5 else Keys.ARROW_LEFT
                before = text("factors")
                if k % 10 == 0:
                    handles[g].click()  # focus (the click itself may move the handle: wait for it)
                    time.sleep(0.5)
                    before = text("factors")
                driver.execute_script(_OBSERVE, g, GEOLEVEL_SLIDERS)  # timestamps taken in the page itself
                t0 = time.perf_counter()
                handles[g].send_keys(key)
                # one asynchronous script waits in the page (no polling from here: a busy driver would
                # take CPU from the server and the browser it measures)
                screen = driver.execute_async_script(_WAIT_SHOWN)
                roundtrip = 1000 * (time.perf_counter() - t0)
                if text("factors") == before:
                    raise RuntimeError(f"move {k + 1}: the page showed no new setting")
                acc = re.search(r"accountant: (\d+) ms", text("timing"))
                now = text("factors")
                revisit = now in seen  # the page keeps recent results: a setting seen before costs no accounting
                seen.add(now)
                rows.append(
                    {
                        "factors": now,
                        "move": k + 1,
                        "geolevel": names[g],
                        "key": "right" if key == Keys.ARROW_RIGHT else "left",
                        "revisit": revisit,
                        "screen_ms": round(screen, 1),
                        "webdriver_ms": round(roundtrip, 1),
                        "accountant_ms": int(acc.group(1)) if acc else None,
                    }
                )
            return rows
        finally:
            driver.quit()
            server.terminate()
            server.wait(timeout=30)


def in_process(scenario: str, factor_texts: list[str]) -> tuple[list[float], float]:
    """The same-run baselines: milliseconds of :func:`explorer.model.live` for each setting (geolevel
    factors as the panel lists them), computed in this process with no browser running and nothing
    kept; and the median of ten cold certified δ of the production allocation's proxy pair at the
    promised ε (a fixed reference workload: the machine's speed in this run)."""
    from fractions import Fraction

    from explorer import model
    from optimizer.scenario import load_scenario
    from optimizer.search import proxy_composition, target_from_allocation

    sc = load_scenario(scenario)
    base = sc.load_allocation()
    out = []
    for text in factor_texts:
        model._CACHE.clear()
        geo = tuple(sorted((g, Fraction(f)) for g, f in (i.split("=") for i in text.split(", ")) if Fraction(f) != 1))
        t0 = time.perf_counter()
        model.live(sc, base, model.Setting(geo))
        out.append(1000 * (time.perf_counter() - t0))
    promise = target_from_allocation(base, delta=sc.target_delta_text, conversion=sc.conversion)
    ref = []
    for _ in range(10):
        t0 = time.perf_counter()
        proxy_composition(base).delta(promise.epsilon, tol=model.DELTA_TOL, rtol=model.DELTA_RTOL)
        ref.append(1000 * (time.perf_counter() - t0))
    return out, statistics.median(ref)


def certify_times(scenario: str, workers: int = 2) -> dict:
    """Seconds of "Certify on all pairs" (:class:`explorer.certify.Certifier`) for the scenario's own
    allocation: cold (a fresh cache) and again with its cache (a new certifier, as after a restart)."""
    from explorer.certify import Certifier
    from optimizer.scenario import load_scenario
    from optimizer.search import target_from_allocation

    sc = load_scenario(scenario)
    alloc = sc.load_allocation()
    target = target_from_allocation(alloc, delta=sc.target_delta_text, conversion=sc.conversion)
    out: dict = {}
    with tempfile.TemporaryDirectory() as root:
        for label in ("cold", "cached"):
            cert = Certifier(root, workers=workers)
            t0 = time.perf_counter()
            key = cert.start(alloc, [target])
            while (st := cert.status(key)) is not None and st.state == "running":
                time.sleep(0.05)
            out[f"certify_{label}_s"] = round(time.perf_counter() - t0, 2)
            out["certify_verdict"] = st.text if st is not None else ""
            out["certify_pairs"] = st.n_pairs if st is not None else 0
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="dhc-persons")
    ap.add_argument("--moves", type=int, default=50)
    ap.add_argument("--out", default="reports/benchmarks/explorer.csv")
    ap.add_argument("--no-certify", action="store_true", help="skip timing 'Certify on all pairs'")
    args = ap.parse_args(argv)
    rows = measure(args.scenario, args.moves)
    certify = {} if args.no_certify else certify_times(args.scenario)
    inproc, reference = in_process(args.scenario, [r["factors"] for r in rows if not r["revisit"]])
    screen = [r["screen_ms"] for r in rows]
    acc = [r["accountant_ms"] for r in rows if r["accountant_ms"] is not None]
    new = [r for r in rows if not r["revisit"]]
    screen_new = [r["screen_ms"] for r in new]
    acc_new = [r["accountant_ms"] for r in new if r["accountant_ms"] is not None]
    summary = {
        "scenario": args.scenario,
        "moves": len(rows),
        "screen_ms_median": statistics.median(screen),
        "screen_ms_p95": _p95(screen),
        "webdriver_ms_median": statistics.median(r["webdriver_ms"] for r in rows),
        "webdriver_ms_p95": _p95([r["webdriver_ms"] for r in rows]),
        "accountant_ms_median": statistics.median(acc) if acc else None,
        "accountant_ms_p95": _p95(acc) if acc else None,
        "first_visits": len(new),
        "screen_ms_median_first_visits": statistics.median(screen_new) if screen_new else None,
        "screen_ms_p95_first_visits": _p95(screen_new) if screen_new else None,
        "accountant_ms_median_first_visits": statistics.median(acc_new) if acc_new else None,
        "accountant_ms_p95_first_visits": _p95(acc_new) if acc_new else None,
        "inprocess_ms_median_first_visits": statistics.median(inproc) if inproc else None,
        "inprocess_ms_p95_first_visits": _p95(inproc) if inproc else None,
        "reference_delta_ms": reference,
        "target": "p95 on screen <= 150 ms, accountant <= 70 ms",
        **certify,
    }
    print(f"{'':24}{'median':>10}{'p95':>10}")
    print(f"{'slider → screen (ms)':24}{summary['screen_ms_median']:>10.1f}{summary['screen_ms_p95']:>10.1f}")
    print(f"{'seen by WebDriver (ms)':24}{summary['webdriver_ms_median']:>10.1f}{summary['webdriver_ms_p95']:>10.1f}")
    if acc:
        print(f"{'accountant (ms)':24}{summary['accountant_ms_median']:>10.1f}{summary['accountant_ms_p95']:>10.1f}")
    if screen_new and acc_new:
        print(f"first visits only ({len(new)} of {len(rows)} moves; the others are settings the page keeps):")
        print(f"{'  slider → screen (ms)':24}{statistics.median(screen_new):>10.1f}{_p95(screen_new):>10.1f}")
        print(f"{'  accountant (ms)':24}{statistics.median(acc_new):>10.1f}{_p95(acc_new):>10.1f}")
    if inproc:
        print(f"{'  same, no browser (ms)':24}{statistics.median(inproc):>10.1f}{_p95(inproc):>10.1f}")
    print(f"reference: one cold certified δ of the production proxy pair {reference:.1f} ms (this machine, this run)")
    for k in ("certify_cold_s", "certify_cached_s"):
        if k in summary:
            print(f"{k.replace('_', ' ')}: {summary[k]} s ({summary['certify_pairs']} pairs)")
    write_results(args.out, rows, COLUMNS, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
