"""The README is executable: every ```python block runs as written, in order, in one
namespace, from a working folder laid out like the repository (``tests/doc_blocks.py``).
It is the front page: one example per use, each pointing to its page of the documentation
site (``docs/``, checked the same way by ``tests/test_docs.py``).

A block that needs a cluster or cloud storage says so in an HTML comment on the line before
its fence, ``<!-- readme-test: skip (reason) -->``; this test skips exactly those blocks and
checks that each skip gives its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import doc_blocks
import pytest

README = doc_blocks.ROOT / "README.md"
DOCS = doc_blocks.ROOT / "docs"


def test_readme_has_python_blocks() -> None:
    found = doc_blocks.blocks(README)
    assert len(found) >= 4
    skipped = [(line, reason) for line, _, reason in found if reason]
    # only what needs a cluster or cloud storage is skipped
    assert all(re.search(r"cluster|cloud", reason) for _, reason in skipped), skipped


def test_readme_links_to_the_documentation_pages() -> None:
    """The front page links into the site, and every page it links to exists."""
    links = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)]*)?\)", README.read_text())
    assert len(set(links)) >= 8, links
    for link in links:
        assert (doc_blocks.ROOT / link).is_file(), link


def test_readme_blocks_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a fresh interpreter: the other tests' Workbenches are not there."""
    work = doc_blocks.make_workspace(tmp_path)
    monkeypatch.chdir(work)
    monkeypatch.setenv("WORKBENCH_RELEASE_CACHE", str(tmp_path / "release-cache"))
    found = doc_blocks.blocks(README)
    ran = doc_blocks.run_blocks(README, monkeypatch)
    assert ran == len(found) - sum(1 for _, _, skip in found if skip)
