"""Generated reStructuredText documents with what their reading must give back.

Each document is built from parts (headings with any adornment, `.. _label:`
anchors, paragraphs with known and Sphinx-only roles, `::` literal blocks,
`code`/`code-block` directives, admonitions, Sphinx-only directives, lists),
and `Expected` records the heading paths, the anchors, the code blocks (which
must come back whole) and the unknown markup to be counted, so a test checks
the reader against what was written, not against what the reader says.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

# Adornment characters reStructuredText accepts for titles (docutils' list).
ADORNMENTS = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
WORDS = (
    "alpha beta gamma delta ledger chunk section anchor token budget policy "
    "evidence install configure render template filter escape sandbox"
).split()


@dataclass
class Expected:
    titles: list[str] = field(default_factory=list)  # each section's heading path, in order
    anchors: dict[str, str] = field(default_factory=dict)  # heading path -> label
    code: list[str] = field(default_factory=list)  # code blocks' exact text
    unknown: dict[str, int] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)  # role texts that must be in some chunk

    def note(self, name: str) -> None:
        self.unknown[name] = self.unknown.get(name, 0) + 1


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _title(rng: random.Random, used: set[str]) -> str:
    while True:
        text = _words(rng, rng.randint(1, 3)).capitalize() + f" {rng.randint(1, 999)}"
        if text not in used:
            used.add(text)
            return text


def _paragraph(rng: random.Random, exp: Expected) -> list[str]:
    parts = [_words(rng, rng.randint(2, 6))]
    for _ in range(rng.randint(0, 3)):
        kind = rng.randrange(6)
        word = rng.choice(WORDS)
        if kind == 0:
            parts.append(f":ref:`{word.capitalize()} page <{word}-label>`")
            exp.note("role:ref")
            exp.words.append(f"{word.capitalize()} page")
        elif kind == 1:
            parts.append(f":func:`~pkg.mod.{word}_fn`")
            exp.note("role:func")
            exp.words.append(f"{word}_fn")
        elif kind == 2:
            parts.append(f":py:class:`pkg.{word.capitalize()}`")
            exp.note("role:py:class")
            exp.words.append(f"pkg.{word.capitalize()}")
        elif kind == 3:
            parts.append(f":emphasis:`{word}`")  # a role docutils knows
            exp.words.append(word)
        elif kind == 4:
            parts.append(f"``{word}()``")
            exp.words.append(f"{word}()")
        else:
            parts.append(f"**{word}**")
            exp.words.append(word)
        parts.append(_words(rng, rng.randint(1, 4)))
    return [" ".join(parts) + "."]


def _code_lines(rng: random.Random) -> list[str]:
    # Markup inside code is code: `:ref:` here must not be counted or rendered.
    lines = [f"{rng.choice(WORDS)} = {rng.randint(0, 99)}" for _ in range(rng.randint(1, 5))]
    if rng.random() < 0.5:
        lines.append("print(':ref:`not a role`', **kwargs)")
    if rng.random() < 0.3:
        lines.insert(1, "    indented_more()")
    return lines


def _body(rng: random.Random, exp: Expected) -> list[str]:
    """One body element's lines (without the blank line after it)."""
    kind = rng.randrange(9)
    if kind <= 1:
        return _paragraph(rng, exp)
    if kind == 2:
        code = _code_lines(rng)
        exp.code.append("\n".join(code))
        return [_words(rng, 3) + "::", ""] + ["    " + c for c in code]
    if kind == 3:
        code = _code_lines(rng)
        exp.code.append("\n".join(code))
        name = rng.choice(["code-block", "sourcecode"])
        exp.note(f"option:{name}:linenos")  # docutils knows the directive, not the option
        return [f".. {name}:: python", "   :linenos:", ""] + ["   " + c for c in code]
    if kind == 4:
        code = _code_lines(rng)
        exp.code.append("\n".join(code))
        return [".. code:: python", ""] + ["   " + c for c in code]
    if kind == 5:
        name = rng.choice(["note", "warning", "tip", "important", "caution"])
        text = _words(rng, 5)
        exp.words.append(text)
        return [f".. {name}::", "", f"   {text}"]
    if kind == 6:
        name = rng.choice(["versionadded", "versionchanged", "deprecated"])
        exp.note(f"directive:{name}")
        text = _words(rng, 4)
        exp.words.append(text)
        return [f".. {name}:: {rng.randint(1, 9)}.{rng.randint(0, 9)}", "", f"   {text}"]
    if kind == 7:
        name = rng.choice(["autofunction", "autoclass", "toctree"])
        exp.note(f"directive:{name}")
        if name == "toctree":
            return [".. toctree::", "   :maxdepth: 2", "", "   intro", "   api"]
        target = f"pkg.mod.{rng.choice(WORDS)}"
        exp.words.append(target)
        return [f".. {name}:: {target}"]
    items = [_words(rng, 3) for _ in range(rng.randint(1, 4))]
    exp.words.extend(items)
    return [f"* {item}" for item in items]


def generate(seed: int) -> tuple[str, Expected]:
    """A document and what reading it must give back."""
    rng = random.Random(seed)
    exp = Expected()
    chars = rng.sample([c for c in ADORNMENTS if c not in "\\`"], 4)
    styles = [(c, rng.random() < 0.3) for c in chars]  # (character, overlined) per depth
    lines: list[str] = []
    path: list[str] = []
    used: set[str] = set()
    if rng.random() < 0.5:
        lines += _body(rng, exp) + [""]  # text before the first title
        exp.titles.append("")
    for _ in range(rng.randint(1, 6)):
        depth = rng.randint(1, min(len(path) + 1, len(styles)))
        del path[depth - 1 :]
        title = _title(rng, used)
        path.append(title)
        char, over = styles[depth - 1]
        if rng.random() < 0.4:
            label = f"{rng.choice(WORDS)}-{rng.randint(1, 9999)}"
            lines += [f".. _{label}:", ""]
            exp.anchors[" > ".join(path)] = label
        rule = char * (len(title) + rng.randint(0, 3))
        lines += ([rule] if over else []) + [title, rule, ""]
        exp.titles.append(" > ".join(path))
        for _ in range(rng.randint(0, 4)):
            lines += _body(rng, exp) + [""]
    return "\n".join(lines), exp


def _flat(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def check_rst_chunks(source: str, chunks: list[Any]) -> None:
    """The promises of `lines` for a reStructuredText file: each chunk's lines are in
    the file and hold every word of its text; every non-blank line is covered."""
    lines = source.split("\n")
    covered: set[int] = set()
    previous = 0
    for c in chunks:
        first, last = c.location
        assert 1 <= first <= last <= len(lines), c.location
        assert first >= previous, ("chunks out of order", c.location)
        previous = first
        # Every word of the text is in those lines (markup and escapes aside:
        # `Babel`_\s renders as `Babels`, so words are looked up in the lines'
        # letters and digits run together).
        span = _flat("\n".join(lines[first - 1 : last]))
        missing = [w for w in re.findall(r"[a-z0-9]+", c.text.lower()) if w not in span]
        assert not missing, (c.location, missing[:5], c.text[:120])
        covered.update(range(first, last + 1))
    uncovered = [n for n, line in enumerate(lines, 1) if line.strip() and n not in covered]
    assert not uncovered, uncovered[:5]
