"""The click front end of ledger (installed as `ledger_cli`).

Commands are thin: parse, call one library function, render. Heavy imports
(SQLAlchemy, Alembic) stay inside the commands that need them, so `ledger pack`
and `ledger select` start fast.
"""
