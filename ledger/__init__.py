"""ledger: versioned context chunks and audited context packs.

The library works without the command line: `ledger.core.select` is the pure selector
core, `ledger.store.versions` and friends the database shell around it.
"""

__version__ = "0.1.0"
