"""``python -m optimizer.cli``: the ``census-plb`` command line."""

import sys

from optimizer.cli.main import main

sys.exit(main())
