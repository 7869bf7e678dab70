"""The store: the only place with SQL (engine, schema, queries, writes)."""
