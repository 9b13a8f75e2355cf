"""The documentation site (``mkdocs.yml``, ``docs/``) builds in strict mode (no broken link,
anchor or API reference, every page in the navigation), and every page is executable: its
```python blocks run as written, in order, in one namespace per page, as the README's do
(``tests/doc_blocks.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import doc_blocks
import pytest

ROOT = doc_blocks.ROOT
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))


def _ids(pages: list[Path]) -> list[str]:
    return [p.relative_to(DOCS).with_suffix("").as_posix() for p in pages]


def test_site_builds_in_strict_mode(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    # the API reference is generated from the docstrings
    reference = (tmp_path / "reference" / "workbench" / "index.html").read_text()
    assert "validate_column" in reference and "install_package" in reference


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One working folder (with the release files) and one release cache for every page."""
    base = tmp_path_factory.mktemp("docs")
    doc_blocks.make_workspace(base)
    return base


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_page_blocks_run_in_order(
    page: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = doc_blocks.blocks(page)
    skipped = [(line, reason) for line, _, reason in found if reason]
    # only what needs a cluster or cloud storage is skipped
    assert all(re.search(r"cluster|cloud", reason) for _, reason in skipped), skipped
    monkeypatch.chdir(workspace / "work")
    monkeypatch.setenv("WORKBENCH_RELEASE_CACHE", str(workspace / "release-cache"))
    # the commands a page runs as subprocesses import this checkout's package
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    assert doc_blocks.run_blocks(page, monkeypatch) == len(found) - len(skipped)


def test_guides_have_examples() -> None:
    """Every guide and terminology page shows its use in code that runs."""
    guides = [p for p in PAGES if p.parent.name in ("guides", "terminologies")]
    assert guides
    bare = [p.name for p in guides if not any(not s for _, _, s in doc_blocks.blocks(p))]
    assert not bare, bare


def test_benchmarks_page_names_every_script() -> None:
    """Each benchmark script has its figures (or says it has none) on the benchmarks page,
    and every script the page names exists."""
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    named = set(re.findall(r"benchmarks/(\w+\.py)", text))
    scripts = {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert scripts <= named, sorted(scripts - named)
    assert all((ROOT / "benchmarks" / name).is_file() for name in named), named
