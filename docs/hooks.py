"""MkDocs hook: doctest examples in docstrings (``>>>`` lines and their output, up to a
blank line) are shown as Python console code in the API reference, not read as Markdown
(where ``[1]`` would be a reference link)."""

from __future__ import annotations

import re
from typing import Any

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

PROMPT = re.compile(r"^(\s*)>>> ")


class DoctestFence(Preprocessor):
    """Fence each run of lines that starts with ``>>>`` outside a fenced block."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fenced = in_doctest = False
        for line in lines:
            if in_doctest and not line.strip():
                out += ["```", line]
                in_doctest = False
                continue
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and not in_doctest and PROMPT.match(line):
                out += ["", "```pycon"]
                in_doctest = True
            out.append(line)
        if in_doctest:
            out.append("```")
        return out


class DoctestExtension(Extension):
    """Registers :class:`DoctestFence` before the fenced code blocks are read."""

    def extendMarkdown(self, md: Markdown) -> None:  # the name Markdown's API calls
        md.preprocessors.register(DoctestFence(md), "doctest_fence", 29)


def on_config(config: Any) -> Any:
    """Add the extension for pages and docstrings alike."""
    config.markdown_extensions.append(DoctestExtension())
    return config
