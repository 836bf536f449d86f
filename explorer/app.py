"""The budget explorer page (Dash): budgets per geolevel and per query, the promise, presets, the live
panel, "Certify on all pairs", "Optimize from here" and "Export".

Dash (Plotly's dashboard framework, its JavaScript served by the app itself: the page works
offline) was chosen because its callbacks are plain Python functions of the inputs, which keeps
the page a thin layer over the library — every number on the page comes from
:func:`explorer.model.live`, :mod:`explorer.presets`, :mod:`explorer.certify` or the ``census-plb
report`` pipeline; the page computes none. The page's state is one exact :class:`~explorer.model.Setting`
(factors on the baseline's budgets) kept in the browser as fraction strings: a slider move sets one
factor on the slider's grid, a typed factor or a preset sets exact ones. Bad input (a factor of 0, a
δ outside (0, 1), a non-number) is said next to its field and changes nothing else.
"""

from __future__ import annotations

import logging
import math
import subprocess
import threading
from pathlib import Path
from typing import Any

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from werkzeug.serving import BaseWSGIServer, make_server

from accountant.zcdp import CONVERSIONS
from explorer.certify import Certifier
from explorer.export import report_command, write_scenario
from explorer.model import (
    SLIDER_RANGE,
    SLIDER_STEP,
    FieldError,
    Live,
    PagePromise,
    Setting,
    factor_from_slider,
    live,
    parse_factor,
)
from explorer.presets import OBJECTIVE_CHOICES, Preset, optimize_from_here, run_preset, static_presets, uniform_cut
from explorer.tasks import Tasks
from optimizer.scenario import Scenario

__all__ = ["create_app", "start_server"]

_STYLE = {"fontFamily": "system-ui, sans-serif", "maxWidth": "1150px", "margin": "1em auto"}
_ERR = {"color": "#c62828", "marginLeft": "0.5em"}
_ROW = {"display": "flex", "gap": "1em", "alignItems": "center", "flexWrap": "wrap", "margin": "0.4em 0"}
UNIFORM = "uniform"


def _slider_value(f) -> float:
    """The slider position of an exact factor (log10, clipped to the slider's range)."""
    lo, hi = SLIDER_RANGE
    return min(max(math.log10(float(f)), lo), hi)


def _panel(res: Live) -> list[Any]:
    """The live panel: the promise, the certified δ and ε, total ρ, the badge, noise SD per geolevel."""
    ok = res.kept_on_proxy
    badge = html.Span(
        "promise kept on the proxy pair" if ok else "promise NOT kept on the proxy pair",
        id="badge",
        style={"background": "#2e7d32" if ok else "#c62828", "color": "white", "padding": "0.2em 0.5em"},
    )
    rows = [
        ("promise", res.promise, "promise-text"),
        ("promised (ε, δ)", f"ε = {res.promised_epsilon} at δ = {res.promised_delta}", "promise"),
        ("exact δ at the promised ε (certified, ≤)", res.delta_upper, "exact-delta"),
        ("its lower bound (certified, ≥)", res.delta_lower, "exact-delta-lower"),
        ("exact ε at the promised δ (safe side)", res.epsilon_safe, "exact-epsilon"),
        ("total ρ", f"{res.total_rho_decimal} (= {res.total_rho})", "total-rho"),
        ("geolevel factors (ρ × f, exact)", ", ".join(f"{g}={f}" for g, f in res.factors.items()), "factors"),
        ("queries with their own factor", _query_text(res.query_factors), "query-factors"),
    ]
    table = html.Table([html.Tr([html.Th(k, style={"textAlign": "left"}), html.Td(v, id=i)]) for k, v, i in rows])
    extra: list[Any] = []
    if len(res.points) > 1:
        extra.append(
            html.Table(
                [html.Tr([html.Th("δ promised"), html.Th("ε promised"), html.Th("exact δ (≤)"), html.Th("kept")])]
                + [
                    html.Tr(
                        [
                            html.Td(p["delta"]),
                            html.Td(p["epsilon"]),
                            html.Td(p["exact_upper"]),
                            html.Td("yes" if p["kept"] else "NO"),
                        ]
                    )
                    for p in res.points
                ],
                id="curve-points",
            )
        )
    sd = html.Table(
        [html.Tr([html.Th("geolevel"), html.Th("noise SD today (persons)"), html.Th("now")])]
        + [html.Tr([html.Td(r["geolevel"]), html.Td(r["today"]), html.Td(r["now"])]) for r in res.noise_sd],
        id="noise-sd",
    )
    note = "" if res.delta_tolerance_met else " (the δ interval is wider than asked: still certified)"
    timing = html.P(f"accountant: {1000 * res.seconds:.0f} ms{note}", id="timing")
    return [html.P(badge), table, *extra, timing, sd]


def _query_text(factors: dict[str, str], shown: int = 6) -> str:
    if not factors:
        return "none (every query × 1 on top of its geolevel)"
    items = [f"{k}={f}" for k, f in factors.items()]
    return f"{len(items)}: " + ", ".join(items[:shown]) + (" …" if len(items) > shown else "")


# The two figures are plain Plotly JSON (what dcc.Graph receives anyway): building go.Figure objects and
# encoding them took ~25 ms of Python a move, holding the GIL while the next move's numbers were computed.
_FIGURE_MARGIN = {"l": 60, "r": 20, "t": 40, "b": 40}


def _line(x: list[float], y: list[float], name: str, dash: bool = False) -> dict[str, Any]:
    trace: dict[str, Any] = {"type": "scatter", "mode": "lines", "x": x, "y": y, "name": name}
    if dash:
        trace["line"] = {"dash": "dash"}
    return trace


def _curves(curve: list[dict[str, float]]) -> dict[str, Any]:
    eps = [p["eps"] for p in curve]
    return {
        "data": [
            _line(eps, [p["claim"] for p in curve], "zCDP claim (baseline ρ)", dash=True),
            _line(eps, [p["exact"] for p in curve], "exact, this setting (proxy pair)"),
        ],
        "layout": {
            "title": {"text": "(ε, δ): the zCDP claim and the exact guarantee"},
            "yaxis": {"type": "log", "title": {"text": "δ"}},
            "xaxis": {"title": {"text": "ε"}},
            "height": 360,
            "margin": _FIGURE_MARGIN,
        },
    }


def _tradeoff(now: dict[str, list[float]], today: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "data": [
            _line(today["alpha"], today["beta"], "baseline (proxy pair)", dash=True),
            _line(now["alpha"], now["beta"], "this setting (proxy pair)"),
        ],
        "layout": {
            "title": {"text": "f-DP trade-off: type II error β at type I error α (log axes)"},
            "xaxis": {"type": "log", "title": {"text": "α"}, "range": [-20, 0]},
            "yaxis": {"type": "log", "title": {"text": "β"}, "range": [-20, 0]},
            "height": 360,
            "margin": _FIGURE_MARGIN,
        },
    }


def _action_row(label: str, control: Any, button: str, button_id: str, status_id: str) -> html.Div:
    """A labelled control, its button and the span that says what the button did."""
    return html.Div(
        [
            html.Label(label, htmlFor=control.id),
            control,
            html.Button(button, id=button_id, n_clicks=0),
            html.Span("", id=status_id),
        ],
        style=_ROW,
    )


def _page_state() -> tuple[State, ...]:
    """The page's setting and promise fields, as callback states (in this order)."""
    return (
        State("setting", "data"),
        State("target-kind", "value"),
        State("target-delta", "value"),
        State("conversion", "value"),
    )


def _query_sliders(g: str, queries: list[str], setting: Setting) -> list[Any]:
    """One slider per query of geolevel ``g`` (a factor on top of the geolevel's), at the setting's factors;
    only the chosen geolevel's are on the page (with every query's slider on it, Dash's renderer made each
    move several times slower: bench.explorer)."""
    lo, hi = SLIDER_RANGE
    return [
        html.Div(
            [
                html.Span(q, style={"width": "22em", "fontSize": "0.85em"}),
                html.Div(
                    dcc.Slider(
                        id={"type": "qfactor", "geolevel": g, "query": q},
                        min=lo,
                        max=hi,
                        step=SLIDER_STEP,
                        value=_slider_value(setting.query_factor(g, q)),
                        marks=None,
                        updatemode="drag",
                        allow_direct_input=False,  # the exact factor is typed in its own field
                    ),
                    style={"flex": "1"},
                ),
            ],
            style={"display": "flex", "alignItems": "center"},
        )
        for q in queries
    ]


def _geolevel_row(g: str) -> html.Div:
    lo, hi = SLIDER_RANGE
    marks = {lo: f"{10**lo:g}×", 0: "1×", hi: f"{10**hi:g}×"}
    return html.Div(
        [
            html.Label(f"{g}", htmlFor=f"slider-{g}", style={"width": "11em", "fontWeight": "bold"}),
            html.Div(
                dcc.Slider(
                    id={"type": "factor", "geolevel": g},
                    min=lo,
                    max=hi,
                    step=SLIDER_STEP,
                    value=0.0,
                    marks=marks,
                    updatemode="drag",
                    allow_direct_input=False,  # the exact factor is typed in its own field
                ),
                style={"flex": "1", "minWidth": "24em"},
            ),
            dcc.Input(
                id={"type": "typed", "geolevel": g},
                type="text",
                value="1",
                debounce=True,
                size="10",
                style={"width": "8em", "flex": "none"},
                placeholder="factor, e.g. 3/2",
            ),
            html.Span("", id={"type": "typed-error", "geolevel": g}, style=_ERR),
        ],
        className="slider",
        style={"display": "flex", "alignItems": "center", "gap": "0.5em"},
    )


def create_app(
    scenario: Scenario,
    certify_root: str | Path = "runs/explorer",
    workers: int = 2,
    scheduler: str | None = None,
    runs_root: str | Path = "runs",
    export_root: str | Path = "explorer-exports",
) -> Dash:
    """The explorer of ``scenario``'s allocation against its promise (module docstring); background
    certifications cache under ``certify_root``, exports go to ``export_root``."""
    baseline = scenario.load_allocation()
    certifier = Certifier(certify_root, workers=workers, scheduler=scheduler)
    tasks = Tasks()
    presets: dict[str, Preset] = {p.key: p for p in static_presets(scenario, baseline)}
    run, run_why = run_preset(scenario, baseline, runs_root)
    if run is not None:
        presets[run.key] = run
    # the first screen is computed here (a callback whose outputs are also its inputs is not called on load)
    first = live(scenario, baseline, Setting(), PagePromise.of_scenario(scenario))
    today_tradeoff = first.tradeoff  # (the baseline's own: Setting() changes nothing)
    levels = baseline.geolevels
    queries = {g: list(baseline.level(g).queries) for g in levels}
    scenario_promise = PagePromise.of_scenario(scenario)

    def preset_options() -> list[dict[str, Any]]:
        opts: list[dict[str, Any]] = [{"label": p.label, "value": k} for k, p in presets.items()]
        opts.insert(
            1, {"label": "uniform minimax cut: every budget × the largest c keeping the promise", "value": UNIFORM}
        )
        if run is None:
            opts.append({"label": f"the optimizer's run: {run_why}", "value": "run", "disabled": True})
        return opts

    app = Dash(__name__, title=f"census-plb explorer: {scenario.name}")
    app.layout = html.Div(
        [
            html.H1(f"Budget explorer: {scenario.name}"),
            html.P(
                f"{scenario.description} Move a budget; the numbers are the exact accountant's on the proxy pair "
                "(the full spine path with itself): certified, but confirmed on every pair only by "
                "“Certify on all pairs”."
            ),
            dcc.Store(id="setting", data=Setting().as_json()),
            dcc.Store(id="apply", data=None),
            dcc.Store(id="live-curves", data={"curve": first.curve, "tradeoff": first.tradeoff}),
            _action_row(
                "Start from",
                dcc.Dropdown(
                    id="preset", options=preset_options(), value="baseline", clearable=False, style={"width": "42em"}
                ),
                "Load",
                "load",
                "preset-status",
            ),
            html.Div(
                [
                    html.Label("Promise"),
                    dcc.RadioItems(
                        id="target-kind",
                        options=[
                            {"label": "one point (ε, δ)", "value": "point"},
                            {"label": "the δ curve", "value": "curve"},
                        ],
                        value=scenario_promise.kind,
                        inline=True,
                    ),
                    html.Label("δ", htmlFor="target-delta"),
                    dcc.Input(
                        id="target-delta",
                        type="text",
                        value=scenario_promise.delta,
                        debounce=True,
                        size="10",
                        style={"width": "8em"},
                    ),
                    html.Span("", id="delta-error", style=_ERR),
                    html.Label("conversion", htmlFor="conversion"),
                    dcc.Dropdown(
                        id="conversion",
                        options=[{"label": c.label, "value": n} for n, c in CONVERSIONS.items()],
                        value=scenario_promise.conversion,
                        clearable=False,
                        style={"width": "16em"},
                    ),
                ],
                style=_ROW,
            ),
            html.Div([_geolevel_row(g) for g in levels], id="sliders"),
            html.Div(
                [
                    html.Label("per-query factors of", htmlFor="query-level"),
                    dcc.Dropdown(
                        id="query-level",
                        options=[{"label": f"{g} ({len(queries[g])} queries)", "value": g} for g in levels],
                        value=None,
                        placeholder="choose a geolevel to set its queries' factors",
                        style={"width": "28em"},
                    ),
                ],
                style=_ROW,
            ),
            html.Div([], id="query-sliders"),
            html.Div("", id="input-error", style=_ERR),
            dcc.Loading(html.Div(_panel(first), id="panel"), delay_show=400),
            html.Div(
                [
                    html.Button("Certify on all pairs", id="certify", n_clicks=0),
                    html.Progress(id="certify-progress", max="1", value="0", style={"width": "16em"}),
                    html.Span("not certified on all pairs yet", id="certify-status"),
                ],
                style=_ROW,
            ),
            _action_row(
                "objective",
                dcc.Dropdown(
                    id="objective",
                    options=[{"label": o, "value": o} for o in OBJECTIVE_CHOICES],
                    value=scenario.objective,
                    clearable=False,
                    style={"width": "20em"},
                ),
                "Optimize from here",
                "optimize",
                "optimize-status",
            ),
            _action_row(
                "export as",
                dcc.Input(
                    id="export-name", type="text", value=f"{scenario.name}-explored", size="28", style={"width": "18em"}
                ),
                "Export scenario + report",
                "export",
                "export-status",
            ),
            dcc.Interval(id="tick", interval=500, disabled=True),
            html.Div(
                [dcc.Graph(id="curves", style={"flex": "1"}), dcc.Graph(id="tradeoff", style={"flex": "1"})],
                style={"display": "flex", "flexWrap": "wrap"},
            ),
        ],
        style=_STYLE,
    )

    def page_promise(kind, delta, conversion) -> PagePromise:
        return PagePromise.parse(kind, delta, conversion, scenario_promise.curve_deltas)

    def current(data) -> Any:
        return Setting.from_json(data).allocation(baseline)

    @app.callback(
        Output("setting", "data"),
        Output({"type": "factor", "geolevel": ALL}, "value"),
        Output({"type": "typed", "geolevel": ALL}, "value"),
        Output({"type": "qfactor", "geolevel": ALL, "query": ALL}, "value"),
        Output({"type": "typed-error", "geolevel": ALL}, "children"),
        Output("input-error", "children"),
        Output("preset-status", "children"),
        Output("panel", "children"),
        Output("live-curves", "data"),
        Output("delta-error", "children"),
        Input({"type": "factor", "geolevel": ALL}, "value"),
        Input({"type": "typed", "geolevel": ALL}, "value"),
        Input({"type": "qfactor", "geolevel": ALL, "query": ALL}, "value"),
        Input("load", "n_clicks"),
        Input("apply", "data"),
        Input("target-kind", "value"),
        Input("target-delta", "value"),
        Input("conversion", "value"),
        State("preset", "value"),
        State("setting", "data"),
    )
    def change(sliders, typed, qsliders, _load, applied, kind, delta, conversion, preset, data):
        """One change of the page: which input moved decides what changes (module docstring); then the
        live numbers, in the same response (one round trip a move); the figures follow from ``live-curves``."""
        setting = Setting.from_json(data)
        trig = ctx.triggered_id
        qids = [(i["id"]["geolevel"], i["id"]["query"]) for i in ctx.inputs_list[2]]  # the sliders on the page
        typed_errors = [""] * len(levels)
        status: Any = no_update

        def unchanged(errors: list[str], message: Any, preset_message: Any) -> tuple:
            keep = [no_update] * len(levels)
            return (no_update, keep, keep, [no_update] * len(qids), errors, message, preset_message, *(no_update,) * 3)

        try:
            if isinstance(trig, dict) and trig.get("type") == "factor":
                g = trig["geolevel"]
                setting = setting.with_geolevel(g, factor_from_slider(sliders[levels.index(g)], f"slider of {g}"))
            elif isinstance(trig, dict) and trig.get("type") == "typed":
                g = trig["geolevel"]
                i = levels.index(g)
                try:
                    setting = setting.with_geolevel(g, parse_factor(typed[i], f"factor of {g}"))
                except FieldError as exc:
                    typed_errors[i] = str(exc)
                    return unchanged(typed_errors, "", no_update)
            elif isinstance(trig, dict) and trig.get("type") == "qfactor":
                g, q = trig["geolevel"], trig["query"]
                f = factor_from_slider(qsliders[qids.index((g, q))], f"slider of {g}/{q}")
                setting = setting.with_query(g, q, f)
            elif trig in ("load", "apply"):
                key = (applied or {}).get("key") if trig == "apply" else preset
                if key is None:  # nothing chosen or nothing to apply
                    return unchanged(typed_errors, "", no_update)
                if key == UNIFORM:
                    promise = page_promise(kind, delta, conversion)
                    alloc, c = uniform_cut(baseline, promise.points(baseline))
                    setting = Setting.from_allocation(baseline, alloc)
                    status = f"uniform minimax cut: every budget × {float(c):.10g} (exact factor {c})"
                elif key in presets:
                    setting = Setting.from_allocation(baseline, presets[key].allocation)
                    status = f"loaded: {presets[key].label}"
                else:
                    return unchanged(typed_errors, "", f"no preset {key!r}")
        except FieldError as exc:
            return unchanged(typed_errors, str(exc), no_update)
        moved = isinstance(trig, dict) and trig.get("type") in ("factor", "qfactor")
        # a slider keeps the position the user gave it (writing back log10 of its grid factor would move
        # it off the slider's steps, and the next step could land on the same factor); typed factors and
        # presets move the sliders to their exact factors
        geo_sliders = (
            [no_update] * len(levels) if moved else [_slider_value(setting.geolevel_factor(g)) for g in levels]
        )
        q_sliders = [no_update] * len(qids) if moved else [_slider_value(setting.query_factor(g, q)) for g, q in qids]
        head = (setting.as_json(), geo_sliders, [str(setting.geolevel_factor(g)) for g in levels], q_sliders)
        try:
            promise = page_promise(kind, delta, conversion)
        except FieldError as exc:  # said next to the field; the numbers shown stay those of the last valid input
            return (*head, typed_errors, "", status, no_update, no_update, str(exc))
        res = live(scenario, baseline, setting, promise)
        return (*head, typed_errors, "", status, _panel(res), {"curve": res.curve, "tradeoff": res.tradeoff}, "")

    @app.callback(Output("curves", "figure"), Output("tradeoff", "figure"), Input("live-curves", "data"))
    def draw(curves):
        if not curves:
            return no_update, no_update
        return _curves(curves["curve"]), _tradeoff(curves["tradeoff"], today_tradeoff)

    @app.callback(Output("query-sliders", "children"), Input("query-level", "value"), State("setting", "data"))
    def show_queries(g, data):
        if g not in queries:
            return []
        return [
            html.P(f"{g}: a factor per query, on top of {g}'s (others 1)", style={"margin": "0.2em 0"}),
            *_query_sliders(g, queries[g], Setting.from_json(data)),
        ]

    @app.callback(
        Output("tick", "disabled", allow_duplicate=True),
        Input("certify", "n_clicks"),
        *_page_state(),
        prevent_initial_call=True,
    )
    def certify(_clicks, data, kind, delta, conversion):
        try:
            certifier.start(current(data), page_promise(kind, delta, conversion).points(baseline))
        except FieldError:
            return no_update
        return False  # poll the progress

    @app.callback(
        Output("tick", "disabled", allow_duplicate=True),
        Output("optimize-status", "children", allow_duplicate=True),
        Input("optimize", "n_clicks"),
        State("objective", "value"),
        *_page_state(),
        prevent_initial_call=True,
    )
    def optimize(clicks, objective, data, kind, delta, conversion):
        try:
            promise = page_promise(kind, delta, conversion)
        except FieldError as exc:
            return no_update, str(exc)
        here = current(data)
        points = promise.points(baseline)

        def job(say):
            alloc, text = optimize_from_here(scenario, here, points, objective)
            key = f"here-{clicks}"
            presets[key] = Preset(key, f"optimized from a setting: {text} (proxy pair)", alloc)
            say(text)
            return key

        st = tasks.start("optimize", job, f"optimizing {objective} from this setting on the proxy pair …")
        return False, st.text

    @app.callback(
        Output("tick", "disabled", allow_duplicate=True),
        Output("export-status", "children", allow_duplicate=True),
        Input("export", "n_clicks"),
        State("export-name", "value"),
        State("objective", "value"),
        *_page_state(),
        prevent_initial_call=True,
    )
    def export(_clicks, name, objective, data, kind, delta, conversion):
        try:
            promise = page_promise(kind, delta, conversion)
            ex = write_scenario(export_root, str(name or "").strip(), scenario, current(data), promise, objective)
        except (FieldError, ValueError) as exc:
            return no_update, f"not exported: {exc}"

        def job(say):
            ex.run_dir.parent.mkdir(parents=True, exist_ok=True)
            log = ex.run_dir.parent / "report.log"
            say(f"wrote {ex.scenario} and {ex.allocation}; census-plb report running (log {log}) …")
            with open(log, "w", encoding="utf-8") as fh:
                rc = subprocess.run(report_command(ex), stdout=fh, stderr=subprocess.STDOUT, check=False).returncode
            if rc != 0:
                tail = log.read_text(encoding="utf-8").strip().splitlines()[-1:] or ["(no output)"]
                raise RuntimeError(f"census-plb report exited with {rc}: {tail[0]} (log {log})")
            say(f"exported: {ex.scenario}; report {ex.report_dir / 'report.html'}")
            return str(ex.report_dir / "report.html")

        st = tasks.start("export", job, f"wrote {ex.scenario} and {ex.allocation}; starting census-plb report …")
        return False, st.text

    @app.callback(
        Output("certify-status", "children"),
        Output("certify-status", "style"),
        Output("certify-progress", "value"),
        Output("optimize-status", "children"),
        Output("export-status", "children"),
        Output("preset", "options"),
        Output("apply", "data"),
        Output("tick", "disabled"),
        Input("tick", "n_intervals"),
        Input("setting", "data"),
        Input("target-kind", "value"),
        Input("target-delta", "value"),
        Input("conversion", "value"),
        State("apply", "data"),
    )
    def poll(_tick, data, kind, delta, conversion, applied):
        """The background tasks' states: certification of the current setting, optimize, export."""
        try:
            key = certifier.key(current(data), page_promise(kind, delta, conversion).points(baseline))
            st = certifier.status(key)
        except FieldError:
            st = None
        if st is None:
            cert, frac = "not certified on all pairs yet", "0"
        elif st.state == "running":
            cert, frac = (
                f"certifying on all {st.n_pairs} pairs: {st.done} results, {st.seconds:.0f} s …",
                f"{st.fraction:.3f}",
            )
        else:
            cert, frac = st.text, "1"
        opt, exp = tasks.status("optimize"), tasks.status("export")
        apply: Any = no_update
        if opt is not None and opt.state == "done" and (applied or {}).get("key") != opt.result:
            apply = {"key": opt.result}  # load the optimum once it is there
        running = (st is not None and st.state == "running") or tasks.running
        colour = {"confirmed": "#2e7d32", "violated": "#c62828", "failed": "#c62828"}.get(st.state if st else "")
        badge = {"background": colour, "color": "white", "padding": "0.2em 0.5em"} if colour else {}
        return (
            cert,
            badge,
            frac,
            no_update if opt is None else opt.text,
            no_update if exp is None else exp.text,
            preset_options(),
            apply,
            not running,
        )

    return app


def start_server(app: Dash, host: str = "127.0.0.1", port: int = 0) -> tuple[BaseWSGIServer, threading.Thread]:
    """Serve ``app`` in a background thread (``port`` 0: a free one, ``server.server_port``); the
    per-request log lines of the WSGI server are left out."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(host, port, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="census-plb-explorer", daemon=True)
    thread.start()
    return server, thread
