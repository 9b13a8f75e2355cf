"""Import a LOINC release into a store folder (built once, reopened fast).

Concepts are every code the release defines: terms (``Loinc.csv``), parts (``LP…``, from
the part file, the primary part links and the component hierarchy), answer lists (``LL…``)
and answers (``LA…``), one row each, sorted by code. The store holds them with their
properties and designations in long form (sorted by concept row), the answers of each answer
list in order, and the transitive closure of the component hierarchy (``ComponentHierarchy
BySystem``). It is written into a temporary folder renamed into place when complete.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import ReleaseFormatError
from workbench.releases import hygiene
from workbench.releases.archive import ReleaseFile, label
from workbench.releases.closure import Closure
from workbench.releases.loinc import files as lf
from workbench.releases.loinc.store import (
    CODING_PROPERTIES,
    FSN,
    KINDS,
    LOINC,
    PROPERTY_ORDER,
    Store,
)
from workbench.releases.storage import write_table

Progress = Callable[[str], None]

#: Loinc.csv columns that are not string properties (the code; the axes become Codings).
_NOT_PROPERTIES = {"LOINC_NUM", *lf.AXES}
#: English designations of a term: Loinc.csv columns, in order of preference.
_TERM_NAMES = ("LONG_COMMON_NAME", "DisplayName", "SHORTNAME", "CONSUMER_NAME")
#: A linguistic variant's names, in order of preference as its display.
_VARIANT_NAMES = ("LONG_COMMON_NAME", "LinguisticVariantDisplayName", "SHORTNAME")


def build(
    found: list[ReleaseFile], dest: Path, *, progress: Progress | None = None
) -> dict[str, Any]:
    """Import the release files (``files.find_files``) into the store folder ``dest``.

    Returns the store's metadata. Raises ReleaseFormatError for a broken file; then nothing
    is left at ``dest`` or beside it.
    """
    step = progress or (lambda _msg: None)
    return Store.build(dest, lambda tmp: _build(found, tmp, step))


def _read(
    found: list[ReleaseFile], kind: str, step: Progress
) -> list[tuple[ReleaseFile, pd.DataFrame]]:
    out = []
    for file in (f for f in found if f.kind == kind):
        step(f"reading {label(file)}")
        table = lf.read(file)
        hygiene.check_text(table, file)
        out.append((file, table.to_pandas()))
    return out


def _one(found: list[ReleaseFile], kind: str, step: Progress) -> pd.DataFrame | None:
    tables = _read(found, kind, step)
    if not tables:
        return None
    return pd.concat([t for _, t in tables], ignore_index=True)


def _fsn(table: pd.DataFrame) -> pd.Series:
    """LOINC's fully specified name ``COMPONENT:PROPERTY:TIME_ASPCT:SYSTEM:SCALE_TYP[:METHOD]``."""
    name = table["COMPONENT"].astype(str)
    for axis in lf.AXES[1:5]:
        name = name + ":" + table[axis].astype(str)
    method = table["METHOD_TYP"].astype(str)
    name = name.where(method == "", name + ":" + method)
    return name.where(table["COMPONENT"] != "", "")


def _version(loinc: pd.DataFrame) -> str:
    """The release's version: the latest ``VersionLastChanged`` of its terms (``2.80``)."""
    column = loinc.get("VersionLastChanged")
    if column is None:
        return "unknown"
    best: tuple[int, ...] = ()
    text = "unknown"
    for value in column.unique():
        parts = re.findall(r"[0-9]+", str(value))
        key = tuple(int(p) for p in parts)
        if key > best:
            best, text = key, str(value)
    return text if best else "unknown"


@dataclass
class _Files:
    """The release's tables (an empty frame for a file the release lacks)."""

    loinc: pd.DataFrame
    part: pd.DataFrame
    links: pd.DataFrame
    answers: pd.DataFrame
    answer_links: pd.DataFrame
    tree: pd.DataFrame
    mapto: pd.DataFrame | None


class _Rows:
    """Concept rows by code, and displays by code, over the sorted concepts."""

    def __init__(self, every: pd.DataFrame) -> None:
        self.n = len(every)
        self.code_array = pa.array(every["code"], pa.string())
        self.display_array = np.asarray(every["display"], dtype=object)

    def __call__(self, values: pd.Series) -> np.ndarray:
        """The rows of many codes (-1 where unknown), as int32."""
        found = pc.index_in(pa.array(values, pa.string()), value_set=self.code_array)
        return np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int32)

    def display_of(self, values: pd.Series, default: pd.Series | str) -> pd.Series:
        """The displays of many codes (``default`` where unknown)."""
        at = self(values)
        shown = pd.Series(self.display_array[np.maximum(at, 0)], index=values.index, dtype=object)
        return shown.where(at >= 0, default)


def _kept(row: np.ndarray, value: pd.Series) -> np.ndarray:
    """Rows that name a concept and have a value."""
    return (row >= 0) & (value.astype(str) != "").to_numpy()


def _build(found: list[ReleaseFile], out: Path, step: Progress) -> dict[str, Any]:
    f = _read_files(found, step)
    step("concepts")
    fsn = _fsn(f.loinc)
    every = _every_code(f, fsn)
    rows = _Rows(every)
    term_rows, part_rows = rows(f.loinc["LOINC_NUM"]), rows(f.part["PartNumber"])
    step("properties")
    props = _properties(f, rows, term_rows, part_rows)
    _write_properties(props, out)
    step("designations")
    designations, languages = _designations(found, step, f, rows, (term_rows, part_rows), fsn)
    _write_designations(designations, out)
    step("answer lists")
    _write_answers(f, rows, out)
    step("component hierarchy")
    edges = f.tree[f.tree["IMMEDIATE_PARENT"] != ""]
    child, parent = rows(edges["CODE"]), rows(edges["IMMEDIATE_PARENT"])
    keep = (child >= 0) & (parent >= 0)
    Closure.build(rows.n, child[keep], parent[keep]).save(out)
    concepts = _concept_table(every)
    write_table(concepts, out / "concepts.arrow")
    kinds = np.bincount(concepts.column("kind").to_numpy(), minlength=len(KINDS))
    return {
        "system": LOINC,
        "version": _version(f.loinc),
        "concepts": rows.n,
        **{f"{kind}s": int(count) for kind, count in zip(KINDS, kinds, strict=True)},
        "languages": languages,
        "properties": sorted(set(props["property"]) | set(CODING_PROPERTIES)),
        "sources": [label(file) for file in found],
    }


def _read_files(found: list[ReleaseFile], step: Progress) -> _Files:
    """Read every file (ReleaseFormatError for a term twice); the consumer names file fills
    Loinc.csv's ``CONSUMER_NAME``."""
    loinc = _one(found, "loinc", step)
    assert loinc is not None  # find_files guarantees Loinc.csv
    main = next(f for f in found if f.kind == "loinc")
    dup = loinc["LOINC_NUM"].duplicated()
    if dup.any():
        term = loinc["LOINC_NUM"][dup].iloc[0]
        first, second = np.flatnonzero((loinc["LOINC_NUM"] == term).to_numpy())[:2]
        lines = [lf.line_of(main, int(first)), lf.line_of(main, int(second))]
        raise ReleaseFormatError(
            f"the term {term} appears twice (lines {lines[0]} and {lines[1]}); "
            "Loinc.csv holds one row per term",
            file=label(main),
            line=lines[1],
        )

    def table(kind: str) -> pd.DataFrame:
        read = _one(found, kind, step)
        return read if read is not None else pd.DataFrame(columns=list(lf.LAYOUT[kind][1]))

    part, links, answers = table("part"), table("partlink"), table("answerlist")
    answer_links, tree = table("answerlink"), table("hierarchy")
    consumer = _one(found, "consumer", step)
    if consumer is not None:
        names_by_term = dict(zip(consumer["LoincNumber"], consumer["ConsumerName"], strict=True))
        given = loinc.get("CONSUMER_NAME", pd.Series([""] * len(loinc)))
        loinc["CONSUMER_NAME"] = given.where(
            given != "", loinc["LOINC_NUM"].map(names_by_term).fillna("")
        )
    mapto = _one(found, "mapto", step)
    return _Files(loinc, part, links, answers, answer_links, tree, mapto)


def _every_code(f: _Files, fsn: pd.Series) -> pd.DataFrame:
    """Every code (code, kind, display, status), the first source of each winning, sorted."""
    loinc, part, links, answers, tree = f.loinc, f.part, f.links, f.answers, f.tree
    term_display = loinc["LONG_COMMON_NAME"].where(loinc["LONG_COMMON_NAME"] != "", fsn)
    part_display = part["PartDisplayName"].where(part["PartDisplayName"] != "", part["PartName"])
    sources = [
        (loinc["LOINC_NUM"], "term", term_display, loinc["STATUS"]),
        (part["PartNumber"], "part", part_display, part["Status"]),
        (links["PartNumber"], "part", links["PartName"], "ACTIVE"),
        (answers["AnswerListId"], "answer-list", answers["AnswerListName"], "ACTIVE"),
        (answers["AnswerStringId"], "answer", answers["DisplayText"], "ACTIVE"),
        (tree["CODE"], "group", tree["CODE_TEXT"], "ACTIVE"),
    ]
    every = pd.concat(
        [
            pd.DataFrame(
                {"code": code, "kind": KINDS.index(kind), "display": display, "status": status}
            )
            for code, kind, display, status in sources
        ],
        ignore_index=True,
    )
    every = every[every["code"] != ""].drop_duplicates("code", keep="first")
    return every.sort_values("code", kind="stable").reset_index(drop=True)


def _concept_table(every: pd.DataFrame) -> pa.Table:
    """The store's concept table: code, kind, display, status, active."""
    status = every["status"].str.upper()
    return pa.table(
        {
            "code": pa.array(every["code"], pa.string()),
            "kind": pa.array(every["kind"].to_numpy(np.int8)),
            "display": pa.array(every["display"], pa.string()),
            "status": pa.array(status, pa.string()),
            "active": pa.array(~status.isin(["DEPRECATED", "DISCOURAGED"]).to_numpy()),
        }
    )


def _properties(
    f: _Files, rows: _Rows, term_rows: np.ndarray, part_rows: np.ndarray
) -> pd.DataFrame:
    """Every property in long form (row, property, code, value), by row and then in
    ``PROPERTY_ORDER`` (any other property last)."""
    pieces: list[pd.DataFrame] = []

    def add(row: np.ndarray, prop: str | pd.Series, code: Any, value: pd.Series) -> None:
        keep = _kept(row, value)
        if keep.any():
            pieces.append(
                pd.DataFrame(
                    {
                        "row": row[keep],
                        "property": prop[keep] if isinstance(prop, pd.Series) else prop,
                        "code": code[keep] if isinstance(code, pd.Series) else code,
                        "value": value[keep].astype(str),
                    }
                )
            )

    loinc, links, answer_links, mapto = f.loinc, f.links, f.answer_links, f.mapto
    link_prop = links["Property"].str.replace(r"^.*/", "", regex=True)
    link_prop = link_prop.where(links["Property"] != "", links["PartTypeName"])
    add(rows(links["LoincNumber"]), link_prop, links["PartNumber"], links["PartName"])
    linked = pa.array(links["LoincNumber"] + "|" + link_prop, pa.string())
    for axis in lf.AXES:
        keys = pa.array(loinc["LOINC_NUM"] + f"|{axis}", pa.string())
        unlinked = ~pc.is_in(keys, value_set=linked).to_numpy(zero_copy_only=False)
        add(term_rows, axis, None, loinc[axis].where(unlinked, ""))
    for column in loinc.columns:
        if column not in _NOT_PROPERTIES:
            add(term_rows, column, None, loinc[column])
    lists = answer_links["AnswerListId"]
    add(rows(answer_links["LoincNumber"]), "answer-list", lists, rows.display_of(lists, ""))
    if mapto is not None:
        targets = mapto["MAP_TO"]
        add(rows(mapto["LOINC"]), "MAP_TO", targets, rows.display_of(targets, targets))
    add(part_rows, "PartTypeName", None, f.part["PartTypeName"])
    add(part_rows, "STATUS", None, f.part["Status"])
    props = (
        pd.concat(pieces, ignore_index=True)
        if pieces
        else pd.DataFrame({"row": [], "property": [], "code": [], "value": []})
    )
    order = {name: i for i, name in enumerate(PROPERTY_ORDER)}
    ranks = pc.index_in(pa.array(props["property"], pa.string()), pa.array(list(order)))
    props["rank"] = pc.fill_null(ranks, len(order)).to_numpy()  # any other property: last
    return props.sort_values(["row", "rank"], kind="stable")


def _write_properties(props: pd.DataFrame, out: Path) -> None:
    write_table(
        pa.table(
            {
                "row": pa.array(props["row"].to_numpy(np.int32)),
                "property": pa.array(props["property"], pa.string()).dictionary_encode(),
                "code": pa.array(props["code"], pa.string(), from_pandas=True),
                "value": pa.array(props["value"], pa.string()),
            }
        ),
        out / "properties.arrow",
    )


def _designations(
    found: list[ReleaseFile],
    step: Progress,
    f: _Files,
    rows: _Rows,
    term_and_part_rows: tuple[np.ndarray, np.ndarray],
    fsn: pd.Series,
) -> tuple[pd.DataFrame, list[str]]:
    """Every designation (row, language, use, value), English first, then each linguistic
    variant's language (its own country first); and the languages in that order."""
    names: list[pd.DataFrame] = []
    languages = ["en-US"]

    def name(row: np.ndarray, language: str, use: str, value: pd.Series) -> None:
        keep = _kept(row, value)
        if keep.any():
            names.append(
                pd.DataFrame(
                    {
                        "row": row[keep],
                        "language": language,
                        "use": use,
                        "value": value[keep].astype(str),
                        "lang_rank": languages.index(language),
                    }
                )
            )

    term_rows, part_rows = term_and_part_rows
    for column in _TERM_NAMES:
        if column in f.loinc.columns:
            name(term_rows, "en-US", column, f.loinc[column])
    name(term_rows, "en-US", FSN, fsn)
    name(part_rows, "en-US", "PartName", f.part["PartName"])
    tags = _variant_languages(found, step)
    for file, table in _read(found, "variant", step):
        variant = lf.variant_of(file)
        tag = tags.get(variant.id, variant.tag)
        if tag not in languages:
            languages.append(tag)
        variant_rows = rows(table["LOINC_NUM"])
        for column in _VARIANT_NAMES:
            if column in table.columns:
                name(variant_rows, tag, column, table[column])
        name(variant_rows, tag, FSN, _fsn(table))
    designations = pd.concat(names, ignore_index=True)
    # English first, then each language with its own country first (de-DE before de-AT)
    languages = ["en-US", *sorted(languages[1:], key=_language_key)]
    designations["lang_rank"] = pd.Categorical(designations["language"], languages).codes
    designations = designations.sort_values(["row", "lang_rank"], kind="stable")
    designations = designations.drop_duplicates(["row", "language", "value"], keep="first")
    return designations, languages


def _write_designations(designations: pd.DataFrame, out: Path) -> None:
    write_table(
        pa.table(
            {
                "row": pa.array(designations["row"].to_numpy(np.int32)),
                "language": pa.array(designations["language"], pa.string()).dictionary_encode(),
                "use": pa.array(designations["use"], pa.string()).dictionary_encode(),
                "value": pa.array(designations["value"], pa.string()),
            }
        ),
        out / "designations.arrow",
    )


def _write_answers(f: _Files, rows: _Rows, out: Path) -> None:
    """Write the answers of each list in order (``answers``) and the lists of each term
    (``answer_links``)."""
    listed = f.answers[f.answers["AnswerStringId"] != ""]
    sequence = pd.to_numeric(listed["SequenceNumber"], errors="coerce").fillna(0)
    members = pd.DataFrame(
        {
            "list": rows(listed["AnswerListId"]),
            "answer": rows(listed["AnswerStringId"]),
            "sequence": sequence.to_numpy(np.int32),
        }
    ).sort_values(["list", "sequence"], kind="stable")
    write_table(
        pa.table({k: pa.array(members[k].to_numpy(np.int32)) for k in members.columns}),
        out / "answers.arrow",
    )
    links = f.answer_links
    links_table = pd.DataFrame(
        {"term": rows(links["LoincNumber"]), "list": rows(links["AnswerListId"])}
    ).sort_values(["term", "list"], kind="stable")
    write_table(
        pa.table({k: pa.array(links_table[k].to_numpy(np.int32)) for k in links_table.columns}),
        out / "answer_links.arrow",
    )


def _language_key(tag: str) -> tuple[str, bool, str]:
    base, _, country = tag.partition("-")
    return base, country.lower() != base.lower(), tag


def _variant_languages(found: list[ReleaseFile], step: Progress) -> dict[int, str]:
    """Linguistic variant ids and their languages (``LinguisticVariants.csv``)."""
    table = _one(found, "languages", step)
    if table is None:
        return {}
    return {
        int(i): f"{lang}-{country}" if country else str(lang)
        for i, lang, country in zip(
            table["ID"], table["ISO_LANGUAGE"], table["ISO_COUNTRY"], strict=True
        )
    }
