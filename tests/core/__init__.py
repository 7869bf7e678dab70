"""Pure-core tests: selector, records, strict JSON, `ledger pack` and `ledger select`."""
