"""``census-plb``: the command-line front end (thin over the library).

Each sub-command lives in ``optimizer/cli/commands/<name>.py`` and exposes
``HELP`` (one line), ``configure(parser)`` and ``run(args) -> int``.  Errors are printed as
one clear line (exit code 2 for bad input, 1 for a failed computation); ``--debug`` shows the
traceback.  Exit code 0 means success; ``optimize`` returns 3 when the confirmation fails.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

COMMANDS = ("account", "pairs", "geolevels", "optimize", "report", "scenario", "explore")

EPILOG = """examples:
  census-plb account --sigma2 10000/73 --sigma2 10000/11 --eps 1,2,3
  census-plb pairs --allocation dhc-persons --eps 26.340588852722324353781974500154992685 --json
  census-plb optimize --scenario dhc-persons --json
  census-plb report --scenario dhc-persons
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="census-plb",
        description="Exact, certified privacy accounting of the 2020 Census and budget re-tuning.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"optimizer.cli.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"optimizer.cli.commands.{name}":
                continue
            raise
        p = sub.add_parser(
            name,
            help=mod.HELP,
            description=mod.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
        mod.configure(p)
        p.set_defaults(_run=mod.run)
    return parser


def _pop_debug(argv: list[str]) -> tuple[list[str], bool]:
    """Take ``--debug`` out of ``argv`` wherever it is (before or after the sub-command, also for
    nested actions such as ``scenario list --debug``); arguments after ``--`` are left alone."""
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end]
    return [a for a in argv[:end] if a != "--debug"] + argv[end:], debug


def _one_line_warning(command: str):
    """``warnings.showwarning`` for the CLI: each warning as one ``note:`` line on stderr, each
    distinct message once (``--debug`` keeps Python's default file:line format)."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text in seen:
            return
        seen.add(text)
        print(f"census-plb {command}: note: {text}", file=sys.stderr)

    return show


#: the commands whose finished jobs are cached, so that a rerun resumes (``scenario``: its ``run``)
CACHING_COMMANDS = ("pairs", "optimize", "report", "scenario")


def _caches(args) -> bool:
    """Whether the interrupted command keeps its finished work (``account``, ``geolevels``,
    ``scenario list``/``compare`` compute nothing that is kept)."""
    if args.command == "scenario":
        return getattr(args, "action", None) == "run"
    return args.command in CACHING_COMMANDS


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv, debug = _pop_debug(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    args.debug = debug
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():
            if not args.debug:
                warnings.showwarning = _one_line_warning(args.command)
            return int(args._run(args) or 0)
    except BrokenPipeError:  # `census-plb … --json | head -1`: the reader left; exit quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        except (OSError, ValueError):
            pass
        return 0
    except KeyboardInterrupt:
        if _caches(args):
            print("census-plb: interrupted (finished work is cached; rerun to resume)", file=sys.stderr)
        else:
            print(f"census-plb {args.command}: interrupted (nothing was saved)", file=sys.stderr)
        return 130
    except (ValueError, TypeError, FileNotFoundError) as exc:
        if args.debug:
            raise
        print(f"census-plb {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if args.debug:
            raise
        print(f"census-plb {args.command}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
