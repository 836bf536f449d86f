"""The budget explorer page: one log-scale slider per geolevel and the live panel (Dash).

Dash (Plotly's dashboard framework, its JavaScript served by the app itself: the page works
offline) was chosen because its callbacks are plain Python functions of the inputs, which keeps
the page a thin layer over :func:`explorer.model.live` — every number on the page comes
from there; the page computes none. A move sends the slider values; the callback turns them into
exact factors, asks the model and renders. Bad input (a value that is not a number or is out of
range) is shown next to the sliders and changes nothing else.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from dash import ALL, Dash, Input, Output, State, dcc, html, no_update
from werkzeug.serving import BaseWSGIServer, make_server

from explorer.certify import Certifier
from explorer.model import SLIDER_RANGE, SLIDER_STEP, Live, factor_from_slider, live, scaled_allocation
from optimizer.jobs.provenance import allocation_digest
from optimizer.scenario import Scenario
from optimizer.search import target_from_allocation

__all__ = ["create_app", "start_server"]

_STYLE = {"fontFamily": "system-ui, sans-serif", "maxWidth": "1100px", "margin": "1em auto"}


def _panel(res: Live) -> list[Any]:
    """The live panel: the promise, the certified δ and ε, total ρ, the badge, noise SD per geolevel."""
    badge = (
        html.Span("promise kept on the proxy pair", id="badge", style={"background": "#2e7d32", "color": "white"})
        if res.kept_on_proxy
        else html.Span(
            "promise NOT kept on the proxy pair", id="badge", style={"background": "#c62828", "color": "white"}
        )
    )
    rows = [
        ("promised (ε, δ)", f"ε = {res.promised_epsilon} at δ = {res.promised_delta}", "promise"),
        ("exact δ at the promised ε (certified, ≤)", res.delta_upper, "exact-delta"),
        ("its lower bound (certified, ≥)", res.delta_lower, "exact-delta-lower"),
        ("exact ε at the promised δ (safe side)", res.epsilon_safe, "exact-epsilon"),
        ("total ρ", f"{res.total_rho_decimal} (= {res.total_rho})", "total-rho"),
        ("geolevel factors (ρ × f, exact)", ", ".join(f"{g}={f}" for g, f in res.factors.items()), "factors"),
    ]
    table = html.Table([html.Tr([html.Th(k), html.Td(v, id=i)]) for k, v, i in rows])
    sd = html.Table(
        [html.Tr([html.Th("geolevel"), html.Th("noise SD today (persons)"), html.Th("now")])]
        + [html.Tr([html.Td(r["geolevel"]), html.Td(r["today"]), html.Td(r["now"])]) for r in res.noise_sd],
        id="noise-sd",
    )
    note = "" if res.delta_tolerance_met else " (the δ interval is wider than asked: still certified)"
    return [html.P(badge), table, html.P(f"accountant: {1000 * res.seconds:.0f} ms{note}", id="timing"), sd]


def _figure(res: Live) -> go.Figure:
    fig = go.Figure()
    eps = [p["eps"] for p in res.curve]
    fig.add_trace(
        go.Scatter(x=eps, y=[p["claim"] for p in res.curve], name="zCDP claim (baseline ρ)", line={"dash": "dash"})
    )
    fig.add_trace(go.Scatter(x=eps, y=[p["exact"] for p in res.curve], name="exact, this setting (proxy pair)"))
    fig.update_layout(
        yaxis={"type": "log", "title": "δ"},
        xaxis={"title": "ε"},
        height=380,
        margin={"l": 60, "r": 20, "t": 30, "b": 40},
    )
    return fig


def create_app(
    scenario: Scenario, certify_root: str | Path = "runs/explorer", workers: int = 2, scheduler: str | None = None
) -> Dash:
    """The explorer of ``scenario``'s allocation against its promise; "Certify on all pairs" runs in the
    background (:class:`explorer.certify.Certifier`, caches under ``certify_root``)."""
    baseline = scenario.load_allocation()
    certifier = Certifier(certify_root, workers=workers, scheduler=scheduler)
    promise = target_from_allocation(baseline, delta=scenario.target_delta_text, conversion=scenario.conversion)
    app = Dash(__name__, title=f"census-plb explorer: {scenario.name}")
    lo, hi = SLIDER_RANGE
    sliders = [
        html.Div(
            [
                html.Label(f"{g}: log10 of the factor on its ρ", htmlFor=f"slider-{g}"),
                dcc.Slider(
                    id={"type": "factor", "geolevel": g},
                    min=lo,
                    max=hi,
                    step=SLIDER_STEP,
                    value=0.0,
                    marks={lo: f"{10**lo:g}×", 0: "1×", hi: f"{10**hi:g}×"},
                    updatemode="drag",
                ),
            ],
            className="slider",
        )
        for g in baseline.geolevels
    ]
    app.layout = html.Div(
        [
            html.H1(f"Budget explorer: {scenario.name}"),
            html.P(
                f"{scenario.description} Move a geolevel's budget; the numbers are the exact accountant's on the "
                "proxy pair (the full spine path with itself): certified, but not yet confirmed on every pair."
            ),
            html.Div(sliders, id="sliders"),
            html.Div("", id="input-error", style={"color": "#c62828"}),
            html.Div("…", id="panel"),
            html.Div(
                [
                    html.Button("Certify on all pairs", id="certify", n_clicks=0),
                    html.Progress(id="certify-progress", max="1", value="0", style={"width": "20em"}),
                    html.Span("not certified on all pairs yet", id="certify-status"),
                    dcc.Interval(id="certify-tick", interval=500, disabled=True),
                ],
                style={"display": "flex", "gap": "1em", "alignItems": "center"},
            ),
            dcc.Graph(id="curves"),
        ],
        style=_STYLE,
    )

    @app.callback(
        Output("panel", "children"),
        Output("curves", "figure"),
        Output("input-error", "children"),
        Input({"type": "factor", "geolevel": ALL}, "value"),
    )
    def update(values: list[Any]):
        try:
            factors = {g: factor_from_slider(v) for g, v in zip(baseline.geolevels, values, strict=True)}
            res = live(scenario, baseline, factors)
        except ValueError as exc:  # bad input: said next to the sliders, nothing else changes
            return no_update, no_update, str(exc)
        return _panel(res), _figure(res), ""

    def setting(values: list[Any]):
        factors = {g: factor_from_slider(v) for g, v in zip(baseline.geolevels, values, strict=True)}
        return scaled_allocation(baseline, factors)

    @app.callback(
        Output("certify-tick", "disabled", allow_duplicate=True),
        Input("certify", "n_clicks"),
        State({"type": "factor", "geolevel": ALL}, "value"),
        prevent_initial_call=True,
    )
    def certify(_clicks: int, values: list[Any]):
        try:
            certifier.start(setting(values), promise)
        except ValueError:
            return no_update
        return False  # poll the progress

    @app.callback(
        Output("certify-status", "children"),
        Output("certify-progress", "value"),
        Output("certify-tick", "disabled"),
        Input("certify-tick", "n_intervals"),
        Input({"type": "factor", "geolevel": ALL}, "value"),
    )
    def certify_status(_tick: int | None, values: list[Any]):
        try:
            st = certifier.status(allocation_digest(setting(values)))
        except ValueError:
            return "", "0", True
        if st is None:
            return "not certified on all pairs yet", "0", True
        if st.state == "running":
            text = f"certifying on all {st.n_pairs} pairs: {st.done} results, {st.seconds:.0f} s …"
            return text, f"{st.fraction:.3f}", False
        return st.text, "1", True

    return app


def start_server(app: Dash, host: str = "127.0.0.1", port: int = 0) -> tuple[BaseWSGIServer, threading.Thread]:
    """Serve ``app`` in a background thread (``port`` 0: a free one, ``server.server_port``); the
    per-request log lines of the WSGI server are left out."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(host, port, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="census-plb-explorer", daemon=True)
    thread.start()
    return server, thread
