"""Read the CMS ICD-10-CM tabular XML into a FHIR CodeSystem resource (lossless enough to
answer lookups: chapters and blocks as notSelectable groupers, categories and subcategories
with their descriptions, inclusion terms as designations, ``billable`` on the leaves)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree as ET

from workbench.errors import ReleaseFormatError

SYSTEM = "http://hl7.org/fhir/sid/icd-10-cm"
ROOT_TAG = "ICD10CM.tabular"


def _is_tabular_name(name: str) -> bool:
    low = name.lower().rsplit("/", 1)[-1]
    return low.endswith(".xml") and "tabular" in low and not low.startswith("._")


def find_xml(path: str | Path) -> tuple[str, Any]:
    """(name, opener) of the tabular XML in ``path`` (an XML file, a folder or a zip)."""
    p = Path(path)
    if not p.exists():
        raise ReleaseFormatError("no such file or folder", file=str(path))
    if p.is_dir():
        found = sorted(f for f in p.rglob("*.xml") if _is_tabular_name(f.name))
        if not found:
            raise ReleaseFormatError("no ICD-10-CM tabular XML in this folder", file=str(p))
        return str(found[0]), lambda: open(found[0], "rb")
    if zipfile.is_zipfile(p):
        try:
            with zipfile.ZipFile(p) as z:
                names = sorted(n for n in z.namelist() if _is_tabular_name(n))
        except (zipfile.BadZipFile, OSError) as exc:
            raise ReleaseFormatError(f"unreadable zip: {exc}", file=str(p)) from exc
        if not names:
            raise ReleaseFormatError("no ICD-10-CM tabular XML in this zip", file=str(p))

        def opener() -> IO[bytes]:
            return zipfile.ZipFile(p).open(names[0])

        return f"{p}!{names[0]}", opener
    return str(p), lambda: open(p, "rb")


def detect(path: str | Path) -> bool:
    """True when ``path`` holds an ICD-10-CM tabular XML (root ``ICD10CM.tabular``)."""
    try:
        _, opener = find_xml(path)
        with opener() as fh:
            head = fh.read(4096)
    except Exception:
        return False
    return b"<" + ROOT_TAG.encode() in head


def _text(el: ET.Element | None) -> str:
    return "".join(el.itertext()).strip() if el is not None else ""


def _concept(code: str, display: str, *, abstract: bool) -> dict[str, Any]:
    return {
        "code": code,
        "display": display,
        "property": [
            {"code": "notSelectable", "valueBoolean": abstract},
        ],
    }


def _diag(el: ET.Element) -> dict[str, Any]:
    concept = _concept(_text(el.find("name")), _text(el.find("desc")), abstract=False)
    designations = [
        {
            "use": {"system": "http://snomed.info/sct", "code": "900000000000013009"},
            "value": _text(note),
        }
        for inc in el.findall("inclusionTerm")
        for note in inc.findall("note")
        if _text(note)
    ]
    if designations:
        concept["designation"] = designations
    children = [_diag(sub) for sub in el.findall("diag")]
    concept["property"].append({"code": "billable", "valueBoolean": not children})
    if children:
        concept["concept"] = children
    return concept


def _read(fh: IO[bytes], name: str) -> dict[str, Any]:
    try:
        root = ET.parse(fh).getroot()
    except ET.ParseError as exc:
        raise ReleaseFormatError(f"malformed XML: {exc}", file=name, line=exc.position[0]) from exc
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ReleaseFormatError(f"unreadable: {exc}", file=name) from exc
    if root.tag != ROOT_TAG:
        raise ReleaseFormatError(f"not an ICD-10-CM tabular file (root <{root.tag}>)", file=name)
    version = _text(root.find("version")) or None
    chapters = []
    for chapter in root.findall("chapter"):
        ch = _concept(_text(chapter.find("name")), _text(chapter.find("desc")), abstract=True)
        ch["property"].append({"code": "billable", "valueBoolean": False})
        blocks = []
        for section in chapter.findall("section"):
            block = _concept(section.get("id", ""), _text(section.find("desc")), abstract=True)
            block["property"].append({"code": "billable", "valueBoolean": False})
            cats = [_diag(d) for d in section.findall("diag")]
            if cats:
                block["concept"] = cats
            blocks.append(block)
        if blocks:
            ch["concept"] = blocks
        chapters.append(ch)
    if not chapters:
        raise ReleaseFormatError("no chapters in this ICD-10-CM tabular file", file=name)
    return {
        "resourceType": "CodeSystem",
        "url": SYSTEM,
        "version": version,
        "name": "ICD10CM",
        "title": "ICD-10-CM",
        "status": "active",
        "content": "complete",
        "caseSensitive": True,
        "hierarchyMeaning": "is-a",
        "property": [
            {
                "code": "notSelectable",
                "uri": "http://hl7.org/fhir/concept-properties#notSelectable",
                "type": "boolean",
            },
            {
                "code": "billable",
                "type": "boolean",
                "description": "True for codes valid for submission (leaves)",
            },
        ],
        "concept": chapters,
    }


def read_codesystem(path: str | Path, *, version: str | None = None) -> dict[str, Any]:
    """The FHIR CodeSystem of the tabular XML at ``path``; ReleaseFormatError naming the file."""
    name, opener = find_xml(path)
    try:
        with opener() as fh:
            resource = _read(fh, name)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ReleaseFormatError(f"unreadable: {exc}", file=name) from exc
    if version is not None:
        resource["version"] = version
    return resource
