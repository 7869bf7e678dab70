"""The pure core: values in, values out, no I/O (see README.md beside this file).

>>> from ledger.core import Candidate, Request, select
"""

from ledger.core.context import Candidate, Context
from ledger.core.select import Request, select

__all__ = ["Candidate", "Context", "Request", "select"]
