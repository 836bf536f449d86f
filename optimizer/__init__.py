"""census-plb optimizer: the 2020 Census model (allocations, spine paths, pairs) and the search.

Import the submodules you need (``optimizer.census.allocation``, ``optimizer.census.spine``,
``optimizer.census.pairs``, ``optimizer.jobs.runner``); this package file imports nothing heavy.
References: Su, Su & Wang, arXiv 2606.29835 and arXiv 2410.09296.
"""
