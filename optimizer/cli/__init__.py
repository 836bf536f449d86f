"""The ``census-plb`` command line: argument parsing and printing only, over the library.

* :mod:`~optimizer.cli.main` — the parser, the one-line error and warning handling, the exit codes;
* :mod:`~optimizer.cli.commands` — one module per sub-command (``account``, ``pairs``,
  ``geolevels``, ``optimize``, ``report``, ``scenario``), loaded lazily by :mod:`~optimizer.cli.main`.

``python -m optimizer.cli`` is the same as ``census-plb``.
"""

from __future__ import annotations

from optimizer.cli.main import main

__all__ = ["main"]
