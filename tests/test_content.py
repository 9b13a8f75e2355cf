"""The default content found through ``workbench.content.default_content``: in a checkout it is
the repository's ``valuesets/``; an installed package's own copy comes first; with neither, a
precise error. (The installed wheel is tested in tests/test_wheel.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench import LoadError, Workbench
from workbench.cli import content as cli_content
from workbench.content import default_content

ROOT = Path(__file__).resolve().parent.parent


def test_in_a_checkout_it_is_the_top_level_folder() -> None:
    assert default_content() == ROOT / "valuesets"


def test_the_commands_load_it() -> None:
    wb = cli_content.build_workbench((), (), (), None, no_default_content=False)
    assert wb.registry.all("ValueSet") and wb.resource(
        "ValueSet", "http://hl7.org/fhir/ValueSet/administrative-gender"
    )
    assert not Workbench().registry.all("ValueSet")  # Workbench() itself starts empty


def _package_at(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    """Make ``importlib.resources.files("workbench")`` answer ``folder/workbench``."""
    package = folder / "workbench"
    package.mkdir(parents=True)
    monkeypatch.setattr(
        "workbench.content.resources.files",
        lambda name: package if name == "workbench" else pytest.fail(name),
    )
    return package


def test_an_installed_copy_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package_at(monkeypatch, tmp_path / "site-packages")
    (package / "valuesets").mkdir()
    beside = tmp_path / "site-packages" / "valuesets"  # as a checkout's would be
    beside.mkdir()
    (beside / "README.md").write_text("not this one")
    (tmp_path / "site-packages" / "pyproject.toml").write_text("")
    assert default_content() == package / "valuesets"


def test_missing_content_is_a_precise_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _package_at(monkeypatch, tmp_path / "site-packages")
    with pytest.raises(LoadError, match="the default content is missing") as caught:
        default_content()
    assert str(package / "valuesets") in str(caught.value)
    assert "--no-default-content" in str(caught.value)


def test_a_folder_beside_an_installed_package_is_not_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another distribution's top-level ``valuesets/`` in site-packages is never taken."""
    _package_at(monkeypatch, tmp_path / "site-packages")
    beside = tmp_path / "site-packages" / "valuesets"
    beside.mkdir()
    (beside / "README.md").write_text("someone else's")
    with pytest.raises(LoadError, match="the default content is missing"):
        default_content()
