"""Sub-commands of the ``census-plb`` CLI (one module each; see :mod:`optimizer.cli.main`)."""
