"""Three real ICD-10-CM years, got as a user gets them: the wheels of ``simple-icd-10-cm``
that ship CMS's tabular XML, downloaded with pip (from pip's configured index) into the
release cache's download folder, and loaded from there as they are (a wheel is a zip)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from workbench.releases.loading import downloads

#: year -> the simple-icd-10-cm release that ships it
RELEASES = {"2021": "1.2.0", "2025": "1.4.0", "2026": "1.5.0"}
_NAME = re.compile(rb"<name>([^<]+)</name>")
_CODE = re.compile(r"^[A-Z][0-9A-Z]{2}(\.[0-9A-Z]{1,4})?$")


def wheel(year: str, cache_dir: Path | None = None) -> Path:
    """The wheel of ``year`` in the download folder, fetched by ``pip download`` when it is
    not there yet."""
    folder = downloads(cache_dir)
    release = RELEASES[year]
    found = folder / f"simple_icd_10_cm-{release}-py3-none-any.whl"
    if not found.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                f"simple-icd-10-cm=={release}",
                "-d",
                str(folder),
            ],
            check=True,
            timeout=300,
        )
    assert found.exists(), f"pip download left no {found.name} in {folder}"
    return found


def xml_codes(path: Path) -> set[str]:
    """Every ``<name>`` of the wheel's tabular XML (the categories and subcategories, read
    straight from the file): the codes of that year without the seven-character
    extensions (chapters and blocks, which have no code of that form, left out)."""
    with zipfile.ZipFile(path) as z:
        member = next(n for n in z.namelist() if n.endswith(".xml") and "tabular" in n)
        data = z.read(member)
    names = (m.decode() for m in _NAME.findall(data))
    return {name for name in names if _CODE.match(name)}
