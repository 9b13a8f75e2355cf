"""The default content: the curated ValueSets and CodeSystems (``valuesets/`` at the top of the
repository) that ``workbench validate``, ``workbench serve`` and ``server.py`` load unless told
``--no-default-content``. ``Workbench()`` itself starts empty; ``wb.load(default_content())``
loads them.

An installed package (a wheel, ``pip install .``) carries the folder as package data, at
``workbench/valuesets/`` (setup.py maps that data-only package onto the top-level folder); a
checkout (an editable install, or the repository on ``sys.path``) has it beside the package.

>>> from workbench import Workbench
>>> from workbench.content import default_content
>>> (default_content() / "README.md").is_file()
True
>>> summary = Workbench().load(default_content(), progress=False)
>>> "http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1" in summary.valuesets
True
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from workbench.errors import LoadError

#: The folder's name, in the installed package and at the top of a checkout.
FOLDER = "valuesets"


def default_content() -> Path:
    """The folder of the default content, for ``wb.load``: the package's own copy
    (``workbench/valuesets/``, found through ``importlib.resources``), else the checkout's
    ``valuesets/`` beside the package (in the folder with the pyproject.toml). Raises
    ``LoadError`` naming both places when neither holds it (an installation that left the
    package data out)."""
    package = resources.files("workbench")
    shipped = package / FOLDER
    if isinstance(shipped, Path) and shipped.is_dir():
        return shipped
    checkout = Path(str(package)).parent / FOLDER
    if (checkout / "README.md").is_file() and (checkout.parent / "pyproject.toml").is_file():
        return checkout
    raise LoadError(
        f"the default content is missing: neither {shipped} (the installed package's data) "
        f"nor {checkout} (a checkout's) holds it; reinstall workbench, or pass "
        "--no-default-content"
    )
