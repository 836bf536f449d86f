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
    p.add_argument("--workers", type=int, default=2, help="processes for 'Certify on all pairs' (default 2)")
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler (tcp://HOST:PORT) for 'Certify on all pairs'",
    )


def run(args) -> int:
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port: expected 0 … 65535, got {args.port}")
    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    from explorer.app import create_app, start_server
    from optimizer.scenario import load_scenario

    sc = load_scenario(args.scenario)
    from optimizer.jobs.runner import check_scheduler_address

    scheduler = check_scheduler_address(args.scheduler)
    app = create_app(sc, certify_root=f"runs/explorer/{sc.name}", workers=args.workers, scheduler=scheduler)
    server, thread = start_server(app, args.host, args.port)
    print(f"census-plb explorer for {sc.name}: http://{args.host}:{server.server_port}/  (Ctrl-C stops it)", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()
    return 0
