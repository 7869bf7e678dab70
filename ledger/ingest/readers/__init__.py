"""Document readers, one module per format: a file's text (or a PDF's bytes) -> sections.

`base` holds what they share (`Block`, `Section`, `Work`, the slugs of headings,
strict decoding); `markdown`, `rst`, `html`, `text` and `pdf` read one format
each. `ledger.ingest.documents` picks the reader by extension and cuts the
sections into chunks.
"""
