"""The page machinery every report shares: templates, static files, the policy.

The style and the script are the package's own files (`static/report.css`,
`static/report.js`), read once at import and inlined; their SHA-256 hashes are
the only style and script the Content-Security-Policy allows. The templates
(`templates/*.html`) are rendered by one Jinja2 environment with autoescape on,
so every value a template prints is HTML-escaped unless it is the markup of
another of our templates; the JSON copy of the figures goes through Jinja2's
`tojson`, which writes `<`, `>`, `&` and `'` as `\\u003c` ... so that no value
can close its `<script type="application/json">`.
"""

from __future__ import annotations

import base64
import hashlib
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from ledger.core.reasons import REASONS

_STATIC = files("ledger.report").joinpath("static")
STYLE = _STATIC.joinpath("report.css").read_text(encoding="utf-8").strip()
SCRIPT = _STATIC.joinpath("report.js").read_text(encoding="utf-8").strip()


def _csp_hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


# Nothing may load: no fetch, font, frame, image (but data:), form target or base URL.
CSP = (
    f"default-src 'none'; style-src {_csp_hash(STYLE)}; script-src {_csp_hash(SCRIPT)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def num(x: float) -> str:
    """A coordinate for SVG: at most two decimals, no trailing zeros."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("ledger.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,  # a misspelt name fails the render, never prints ""
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=lambda value: "" if value is None else value,  # a missing figure shows blank
    )
    # Compact, sorted and not ASCII-escaped: the island stays small and readable.
    env.policies["json.dumps_kwargs"] = {
        "sort_keys": True,
        "ensure_ascii": False,
        "separators": (",", ":"),
    }
    env.filters["num"] = num
    # Our own files, inlined as they are (escaping would break the script's `>`).
    env.globals.update(CSP=CSP, STYLE=Markup(STYLE), SCRIPT=Markup(SCRIPT), REASONS=REASONS)
    return env


_ENV = _environment()


def render(template: str, **context: Any) -> str:
    """One report page: `template` (extending `page.html`) with `context`."""
    return _ENV.get_template(template).render(version=_version(), **context)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("context-ledger")
    except Exception:  # not installed as a distribution (a source checkout)
        return ""
