"""Optional integrations: LangChain, LlamaIndex, OpenTelemetry and MCP.

Each module imports its framework when it is imported itself, never before:
`import ledger` and the `ledger` command load none of them. Install the
framework with the matching extra, e.g. `pip install 'context-ledger[langchain]'`.
Every integration goes through `ledger.Ledger` and records ordinary packs.
"""
