"""The one thing pyproject.toml cannot say: the default content, the top-level ``valuesets/``
folder, ships inside the package as ``workbench/valuesets/`` (package data of a data-only
package mapped onto that folder), beside the packages found under ``workbench/``.
``workbench.content.default_content()`` finds it there, or in a checkout beside the package.
Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["workbench", "workbench.*"], exclude=["*.__pycache__"]),
        "workbench.valuesets",
    ],
    package_dir={"workbench.valuesets": "valuesets"},
)
