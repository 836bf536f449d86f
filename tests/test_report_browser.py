"""Render a report in headless Chromium and check the page is not blank (skips without Chromium)."""

import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from optimizer.pipeline.accounting import compute_accounting
from optimizer.report import build_report
from optimizer.scenario import load_scenario

from .test_report import ALLOC, SCENARIO

CHROMIUM = next(
    (
        p
        for p in (
            "/usr/bin/chromium",
            shutil.which("chromium") or "",
            shutil.which("chromium-browser") or "",
            shutil.which("google-chrome") or "",
        )
        if p and Path(p).is_file()
    ),
    None,
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")


def _png_non_white_fraction(data: bytes) -> float:
    """Share of non-white pixels of an 8-bit RGB/RGBA, non-interlaced PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 4], "big")
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            depth, ctype, interlace = body[8], body[9], body[12]
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    non_white = total = 0
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if y % 4 == 0:  # sample every 4th row
            for x in range(0, width, 4):
                px = line[x * bpp : x * bpp + 3]
                total += 1
                non_white += any(v < 240 for v in px)
    return non_white / total


def _screenshot(url: str, shot: Path, size: str, profile: Path) -> None:
    """A screenshot of ``url`` at window ``size`` ("W,H") by headless Chromium, into ``shot``."""
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--screenshot={shot}",
        f"--window-size={size}",
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.is_file(), f"no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"


def test_report_renders_in_chromium(tmp_path):
    (tmp_path / "alloc.toml").write_text(ALLOC)
    (tmp_path / "toy.toml").write_text(SCENARIO)
    out = tmp_path / "report"
    sc = load_scenario(tmp_path / "toy.toml")
    build_report(sc, tmp_path / "no-run", out, accounting=compute_accounting(sc))
    shot = tmp_path / "shot.png"
    _screenshot((out / "report.html").resolve().as_uri(), shot, "1200,3000", tmp_path / "profile")
    frac = _png_non_white_fraction(shot.read_bytes())
    assert frac > 0.02, f"page looks blank: {frac:.4f} non-white"


#: where the first-screen screenshot is kept (a test artefact; git-ignored); ``make screenshots``
#: also copies it to the README's image (CENSUS_PLB_SCREENSHOTS=docs/img)
ARTIFACTS = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"
COMMITTED_REPORT = Path(__file__).resolve().parent.parent / "reports" / "dhc-persons" / "report.html"


def test_the_committed_reports_first_screen_is_the_decision(tmp_path):
    """Issue 34 must-show 4: the committed dhc-persons report opens with its decision table; a
    screenshot of its first screen (1280×900) in headless Chromium is kept as a test artefact."""
    import os
    import re

    html = COMMITTED_REPORT.read_text(encoding="utf-8")
    sections = re.findall(r'<section id="([^"]+)">', html)
    assert sections[0] == "decision", sections[:3]
    body = html.split("<body>", 1)[1]
    before = body.split('<section id="decision">', 1)[0]
    assert len(re.sub(r"<[^>]+>", "", before).strip()) < 200  # nothing but the title above it
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report_first_screen.png"
    if shot.exists():
        shot.unlink()
    _screenshot(COMMITTED_REPORT.resolve().as_uri(), shot, "1280,900", tmp_path / "profile")
    assert _png_non_white_fraction(shot.read_bytes()) > 0.02
    dest = os.environ.get("CENSUS_PLB_SCREENSHOTS")
    if dest:  # make screenshots: the README's image
        Path(dest).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(dest) / shot.name)
