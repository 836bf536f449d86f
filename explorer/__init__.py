"""The budget explorer (``census-plb explore``): a local web page over the library.

:mod:`explorer.model` computes what one setting of the geolevel budgets guarantees
(exact accountant, proxy pair); :mod:`explorer.app` is the page (Dash), which computes
nothing itself.
"""
