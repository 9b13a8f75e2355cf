"""Read the CMS ICD-10-CM tabular XML (``icd10cm_tabular_*.xml``, or a folder or zip holding
it) into rows: chapters and blocks as notSelectable groupers, categories and subcategories with
their dotted codes and descriptions, inclusion terms as designations, ``billable`` on the
leaves, and the seven-character extension codes that ``sevenChrDef`` defines.

Seven-character codes: every leaf under a ``sevenChrDef`` (its own, else its nearest
ancestor's) gets one code per extension character, the code padded with the placeholder ``X``
to six characters first (``S52.521`` -> ``S52.521A``, ``T36.0X1`` -> ``T36.0X1A``,
``S00.00`` -> ``S00.00XA``); its display is the leaf's description, a comma and the
extension's text, as in the CMS code descriptions. The leaf itself is then not billable.

>>> extended("S52.521", "A"), extended("T36.0X1", "D"), extended("S00.00", "S")
('S52.521A', 'T36.0X1D', 'S00.00XS')
>>> extended("T71", "A")
'T71.XXXA'
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from xml.parsers import expat

from workbench import unpacking
from workbench.errors import ReleaseFormatError
from workbench.releases.archive import ReleaseFile, label

SYSTEM = "http://hl7.org/fhir/sid/icd-10-cm"
ROOT_TAG = "ICD10CM.tabular"
_CODE = re.compile(r"^[A-Z][0-9A-Z]{2}(\.[0-9A-Z]{1,4})?$")
# the one kind of exception the tabular list states in prose, on S06: "7th characters D and S
# do not apply to codes in category S06 with 6th character 7 - …, or 8 - …"
_NOT_APPLY = re.compile(
    r"7th characters? ((?:[A-Z0-9](?:,? and |,? or |, )?)+) do(?:es)? not apply to codes in "
    r"category ([A-Z0-9]{3}) with 6th character ([0-9A-Z])(?: - [^,]*, or ([0-9A-Z]) -)?"
)
_YEAR = re.compile(r"(?<![0-9])(20[0-9]{2})(?![0-9])")


def _is_tabular_name(name: str) -> bool:
    low = name.lower().rsplit("/", 1)[-1]
    return low.endswith(".xml") and "tabular" in low and not low.startswith("._")


def release_file(path: str | Path) -> ReleaseFile:
    """The tabular XML in ``path`` (an XML file, a folder or a zip) as a release file.
    ArchiveLimitError when a zip's member is over the unpack limits."""
    p = Path(path)
    if not p.exists():
        raise ReleaseFormatError("no such file or folder", file=str(path))
    if p.is_dir():
        found = sorted(f for f in p.rglob("*.xml") if _is_tabular_name(f.name))
        if not found:
            raise ReleaseFormatError("no ICD-10-CM tabular XML in this folder", file=str(p))
        return ReleaseFile("tabular", str(found[0]))
    if zipfile.is_zipfile(p):
        try:
            with zipfile.ZipFile(p) as z:
                unpacking.check_zip(str(p), z.infolist())  # before unpacking anything
                names = sorted(n for n in z.namelist() if _is_tabular_name(n))
        except (zipfile.BadZipFile, OSError) as exc:
            raise ReleaseFormatError(f"unreadable zip: {exc}", file=str(p)) from exc
        if not names:
            raise ReleaseFormatError("no ICD-10-CM tabular XML in this zip", file=str(p))
        return ReleaseFile("tabular", names[0], p)
    return ReleaseFile("tabular", str(p))


def find_xml(path: str | Path) -> tuple[str, Callable[[], IO[bytes]]]:
    """(name, opener) of the tabular XML in ``path`` (an XML file, a folder or a zip); the
    stream is hashed as it is read during an import (``hashing.tracked``)."""
    file = release_file(path)
    return label(file), file.open


def detect(path: str | Path) -> bool:
    """True when ``path`` holds an ICD-10-CM tabular XML (root ``ICD10CM.tabular``)."""
    try:
        _, opener = find_xml(path)
        with opener() as fh:
            head = fh.read(4096)
    except (ReleaseFormatError, OSError, zipfile.BadZipFile, zlib.error, EOFError):
        return False  # not a readable ICD-10-CM release: detection says no, loading says why
    return b"<" + ROOT_TAG.encode() in head


def peek_version(path: str | Path) -> str | None:
    """The release's version without reading it all: the tabular's ``<version>`` (in its
    first kilobytes), else the year in its file name."""
    name, opener = find_xml(path)
    try:
        with opener() as fh:
            head = fh.read(1 << 14).decode("utf-8", "replace")
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ReleaseFormatError(f"unreadable: {exc}", file=name) from exc
    found = re.search(r"<version>\s*([^<]*?)\s*</version>", head)
    if found and found.group(1):
        return found.group(1)
    return _year_of(name)


def _year_of(name: str) -> str | None:
    years = _YEAR.findall(name.rsplit("/", 1)[-1])
    return years[-1] if years else None


def extended(code: str, char: str) -> str:
    """The seven-character code of a leaf and an extension character (placeholder ``X``)."""
    base = code if len(code) > 3 else code + "."
    return base.ljust(7, "X") + char


@dataclass(slots=True)
class Row:
    """One ICD-10-CM code: what the store keeps of it."""

    code: str
    display: str
    parent: str | None
    kind: str  # chapter, block, category, subcategory, extension
    abstract: bool
    billable: bool
    designations: list[str] = field(default_factory=list)


@dataclass
class Tabular:
    """The rows of a tabular XML, its version and where it came from."""

    version: str | None
    source: str
    rows: list[Row]


class _Node:
    __slots__ = ("attrs", "children", "line", "tag", "text")

    def __init__(self, tag: str, attrs: dict[str, str], line: int) -> None:
        self.tag = tag
        self.attrs = attrs
        self.line = line
        self.text: list[str] = []
        self.children: list[_Node] = []

    def find(self, tag: str) -> _Node | None:
        return next((c for c in self.children if c.tag == tag), None)

    def findall(self, tag: str) -> list[_Node]:
        return [c for c in self.children if c.tag == tag]

    def string(self) -> str:
        return " ".join("".join([*self.text, *(c.string() for c in self.children)]).split()).strip()


def _parse(fh: IO[bytes], name: str) -> _Node:
    """The XML as a tree of nodes that remember their line (expat, for precise errors)."""
    parser = expat.ParserCreate()
    root: list[_Node] = []
    stack: list[_Node] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        node = _Node(tag, attrs, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(_tag: str) -> None:
        stack.pop()

    def text(data: str) -> None:
        if stack:
            stack[-1].text.append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    try:
        while chunk := fh.read(1 << 20):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise ReleaseFormatError(
            f"malformed XML: {expat.errors.messages[exc.code]} (column {exc.offset + 1})",
            file=name,
            line=exc.lineno,
        ) from exc
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ReleaseFormatError(f"unreadable: {exc}", file=name) from exc
    if not root:
        raise ReleaseFormatError("empty file: no XML element", file=name, line=1)
    return root[0]


def _seven(node: _Node) -> list[tuple[str, str]] | None:
    """The extensions of a ``sevenChrDef`` (character, text), or None without one."""
    found = node.find("sevenChrDef")
    if found is None:
        return None
    return [(e.attrs.get("char", ""), e.string()) for e in found.findall("extension")]


def _barred(node: _Node) -> set[tuple[str, str]]:
    """(6th character, 7th character) pairs a category's notes say do not apply."""
    found: set[tuple[str, str]] = set()
    for notes in node.findall("notes"):
        for note in notes.findall("note"):
            match = _NOT_APPLY.search(note.string())
            if match is None:
                continue
            chars = re.findall(r"\b[A-Z0-9]\b", match.group(1))
            sixth = [c for c in (match.group(3), match.group(4)) if c]
            found |= {(s, c) for s in sixth for c in chars}
    return found


def _code_of(node: _Node) -> str:
    found = node.find("name")
    return found.string() if found is not None else ""


def _read(root: _Node, name: str) -> Tabular:
    if root.tag != ROOT_TAG:
        raise ReleaseFormatError(
            f"not an ICD-10-CM tabular file (root <{root.tag}>, expected <{ROOT_TAG}>)",
            file=name,
            line=root.line,
        )
    version_node = root.find("version")
    version = version_node.string() if version_node is not None else ""
    if not version:
        version = _year_of(name) or ""
    reader = _Reader(name)
    for chapter in root.findall("chapter"):
        reader.chapter(chapter)
    if not reader.rows:
        raise ReleaseFormatError("no chapters in this ICD-10-CM tabular file", file=name)
    return Tabular(version or None, name, reader.rows)


class _Reader:
    """The rows of one tabular file, in document order (chapters, blocks, codes and their
    seven-character extensions); ReleaseFormatError naming the file and line of a broken
    element or a code seen twice."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[Row] = []
        self.seen: dict[str, int] = {}

    def add(self, row: Row, line: int) -> None:
        """Keep a row (ReleaseFormatError when its code was seen before)."""
        if row.code in self.seen:
            raise ReleaseFormatError(
                f"the code {row.code} appears twice (first on line {self.seen[row.code]})",
                file=self.name,
                line=line,
            )
        self.seen[row.code] = line
        self.rows.append(row)

    def chapter(self, chapter: _Node) -> None:
        """A chapter (code = its number), its blocks and their codes."""
        number = chapter.find("name")
        ch_code = number.string() if number is not None else ""
        desc = chapter.find("desc")
        if not ch_code:
            raise ReleaseFormatError(
                "a <chapter> without a <name>", file=self.name, line=chapter.line
            )
        self.add(
            Row(ch_code, desc.string() if desc is not None else "", None, "chapter", True, False),
            chapter.line,
        )
        for section in chapter.findall("section"):
            self.section(section, ch_code)

    def section(self, section: _Node, ch_code: str) -> None:
        """A block (code = its range) and its codes; a block of one category is named like
        it (B10): the category stands alone, under the chapter."""
        block = section.attrs.get("id", "")
        if not block:
            raise ReleaseFormatError(
                "a <section> without an id attribute", file=self.name, line=section.line
            )
        sdesc = section.find("desc")
        diags = section.findall("diag")
        parent = ch_code
        if not any(_code_of(d) == block for d in diags):
            text = sdesc.string() if sdesc is not None else ""
            self.add(Row(block, text, ch_code, "block", True, False), section.line)
            parent = block
        seven = _seven(section)
        for node in diags:
            self.diag(node, parent, seven, set())

    def diag(
        self,
        node: _Node,
        parent: str,
        seven: list[tuple[str, str]] | None,
        barred: set[tuple[str, str]],
    ) -> None:
        """A category or subcategory, its children, and the seven-character extensions of a
        leaf under a ``sevenChrDef`` (its own, else its nearest ancestor's)."""
        code = _code_of(node)
        if not _CODE.match(code):
            raise ReleaseFormatError(
                f"a <diag> without a valid ICD-10-CM code in <name> (found {code!r})",
                file=self.name,
                line=node.line,
            )
        desc_node = node.find("desc")
        display = desc_node.string() if desc_node is not None else ""
        if not display:
            raise ReleaseFormatError(
                f"the code {code} has no <desc>", file=self.name, line=node.line
            )
        own = _seven(node)
        seven = own if own is not None else seven
        barred = barred | _barred(node)
        children = node.findall("diag")
        extensions = seven if (not children and seven) else []
        terms = [
            n.string()
            for inc in node.findall("inclusionTerm")
            for n in inc.findall("note")
            if n.string()
        ]
        kind = "category" if len(code) == 3 else "subcategory"
        self.add(
            Row(code, display, parent, kind, False, not children and not extensions, terms),
            node.line,
        )
        for child in children:
            self.diag(child, code, seven, barred)
        self.extensions(node, code, display, extensions, barred)

    def extensions(
        self,
        node: _Node,
        code: str,
        display: str,
        extensions: list[tuple[str, str]],
        barred: set[tuple[str, str]],
    ) -> None:
        """One code per seven-character extension of a leaf (placeholder ``X`` up to six
        characters), except where the 6th character bars the extension."""
        for char, text in extensions:
            if (code.replace(".", "").ljust(6, "X")[5], char) in barred:
                continue
            if len(char) != 1 or not char.isalnum():
                raise ReleaseFormatError(
                    f"a seven-character extension of {code} is not one character ({char!r})",
                    file=self.name,
                    line=node.line,
                )
            self.add(
                Row(extended(code, char), f"{display}, {text}", code, "extension", False, True),
                node.line,
            )


def read(path: str | Path) -> Tabular:
    """The rows of the tabular XML at ``path``; ReleaseFormatError naming the file (and line)."""
    name, opener = find_xml(path)
    try:
        with opener() as fh:
            return _read(_parse(fh, name), name)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ReleaseFormatError(f"unreadable: {exc}", file=name) from exc


def properties() -> list[dict[str, Any]]:
    """The properties the ICD-10-CM CodeSystem declares."""
    return [
        {
            "code": "notSelectable",
            "uri": "http://hl7.org/fhir/concept-properties#notSelectable",
            "type": "boolean",
        },
        {
            "code": "billable",
            "type": "boolean",
            "description": "True for codes valid for submission (leaves, seven-character codes)",
        },
        {
            "code": "kind",
            "type": "code",
            "description": "chapter, block, category, subcategory or extension (seven characters)",
        },
    ]
