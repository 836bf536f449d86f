"""The budget explorer: a local web page where moving a geolevel's budget shows the certified
guarantee at once (exact accountant, proxy pair).

examples:
  census-plb explore                                # dhc-persons on http://127.0.0.1:8050/
  census-plb explore --scenario pl94-units --port 8060
"""

from __future__ import annotations

HELP = "a local web page: move geolevel budgets, see the certified guarantee at once"


def configure(p) -> None:
    p.add_argument("--scenario", default="dhc-persons", help="scenario name or .toml path (default dhc-persons)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8050, help="port (default 8050; 0: a free one)")


def run(args) -> int:
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port: expected 0 … 65535, got {args.port}")
    from explorer.app import create_app, start_server
    from optimizer.scenario import load_scenario

    sc = load_scenario(args.scenario)
    server, thread = start_server(create_app(sc), args.host, args.port)
    print(f"census-plb explorer for {sc.name}: http://{args.host}:{server.server_port}/  (Ctrl-C stops it)", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()
    return 0
