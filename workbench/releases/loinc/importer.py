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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import ReleaseFormatError
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
        out.append((file, lf.read(file).to_pandas()))
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


def _build(found: list[ReleaseFile], out: Path, step: Progress) -> dict[str, Any]:
    loinc = _one(found, "loinc", step)
    assert loinc is not None  # find_files guarantees Loinc.csv
    main = next(f for f in found if f.kind == "loinc")
    dup = loinc["LOINC_NUM"].duplicated()
    if dup.any():
        raise ReleaseFormatError(
            f"the term {loinc['LOINC_NUM'][dup].iloc[0]} appears twice",
            file=label(main),
            line=int(np.flatnonzero(dup.to_numpy())[0]) + 2,
        )
    empty = pd.DataFrame
    part = _one(found, "part", step)
    part = part if part is not None else empty(columns=list(lf.LAYOUT["part"][1]))
    links = _one(found, "partlink", step)
    links = links if links is not None else empty(columns=list(lf.LAYOUT["partlink"][1]))
    answers = _one(found, "answerlist", step)
    answers = answers if answers is not None else empty(columns=list(lf.LAYOUT["answerlist"][1]))
    answer_links = _one(found, "answerlink", step)
    if answer_links is None:
        answer_links = empty(columns=list(lf.LAYOUT["answerlink"][1]))
    tree = _one(found, "hierarchy", step)
    tree = tree if tree is not None else empty(columns=list(lf.LAYOUT["hierarchy"][1]))
    consumer = _one(found, "consumer", step)
    if consumer is not None:  # the consumer names file fills Loinc.csv's CONSUMER_NAME
        names_by_term = dict(zip(consumer["LoincNumber"], consumer["ConsumerName"], strict=True))
        given = loinc.get("CONSUMER_NAME", pd.Series([""] * len(loinc)))
        loinc["CONSUMER_NAME"] = given.where(
            given != "", loinc["LOINC_NUM"].map(names_by_term).fillna("")
        )
    mapto = _one(found, "mapto", step)

    # --- concepts: every code, the first source of each wins ---------------------------
    step("concepts")
    fsn = _fsn(loinc)
    term_display = loinc["LONG_COMMON_NAME"].where(loinc["LONG_COMMON_NAME"] != "", fsn)
    sources = [
        pd.DataFrame(
            {
                "code": loinc["LOINC_NUM"],
                "kind": KINDS.index("term"),
                "display": term_display,
                "status": loinc["STATUS"],
            }
        ),
        pd.DataFrame(
            {
                "code": part["PartNumber"],
                "kind": KINDS.index("part"),
                "display": part["PartDisplayName"].where(
                    part["PartDisplayName"] != "", part["PartName"]
                ),
                "status": part["Status"],
            }
        ),
        pd.DataFrame(
            {
                "code": links["PartNumber"],
                "kind": KINDS.index("part"),
                "display": links["PartName"],
                "status": "ACTIVE",
            }
        ),
        pd.DataFrame(
            {
                "code": answers["AnswerListId"],
                "kind": KINDS.index("answer-list"),
                "display": answers["AnswerListName"],
                "status": "ACTIVE",
            }
        ),
        pd.DataFrame(
            {
                "code": answers["AnswerStringId"],
                "kind": KINDS.index("answer"),
                "display": answers["DisplayText"],
                "status": "ACTIVE",
            }
        ),
        pd.DataFrame(
            {
                "code": tree["CODE"],
                "kind": KINDS.index("group"),
                "display": tree["CODE_TEXT"],
                "status": "ACTIVE",
            }
        ),
    ]
    every = pd.concat(sources, ignore_index=True)
    every = every[every["code"] != ""].drop_duplicates("code", keep="first")
    every = every.sort_values("code", kind="stable").reset_index(drop=True)
    codes = pd.Index(every["code"])
    status = every["status"].str.upper()
    concepts = pa.table(
        {
            "code": pa.array(every["code"], pa.string()),
            "kind": pa.array(every["kind"].to_numpy(np.int8)),
            "display": pa.array(every["display"], pa.string()),
            "status": pa.array(status, pa.string()),
            "active": pa.array(~status.isin(["DEPRECATED", "DISCOURAGED"]).to_numpy()),
        }
    )
    n = len(codes)

    code_array = pa.array(every["code"], pa.string())
    display_array = np.asarray(every["display"], dtype=object)

    def rows(values: pd.Series) -> np.ndarray:
        found = pc.index_in(pa.array(values, pa.string()), value_set=code_array)
        return np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int32)

    def display_of(values: pd.Series, default: pd.Series | str) -> pd.Series:
        at = rows(values)
        shown = pd.Series(display_array[np.maximum(at, 0)], index=values.index, dtype=object)
        return shown.where(at >= 0, default)

    term_rows = rows(loinc["LOINC_NUM"])

    # --- properties (long form) -------------------------------------------------------
    step("properties")
    pieces: list[pd.DataFrame] = []

    def add(row: np.ndarray, prop: str | pd.Series, code: Any, value: pd.Series) -> None:
        keep = (row >= 0) & (value.astype(str) != "").to_numpy()
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
    add(
        rows(answer_links["LoincNumber"]),
        "answer-list",
        answer_links["AnswerListId"],
        display_of(answer_links["AnswerListId"], ""),
    )
    if mapto is not None:
        add(
            rows(mapto["LOINC"]),
            "MAP_TO",
            mapto["MAP_TO"],
            display_of(mapto["MAP_TO"], mapto["MAP_TO"]),
        )
    part_rows = rows(part["PartNumber"])
    add(part_rows, "PartTypeName", None, part["PartTypeName"])
    add(part_rows, "STATUS", None, part["Status"])
    props = (
        pd.concat(pieces, ignore_index=True)
        if pieces
        else pd.DataFrame({"row": [], "property": [], "code": [], "value": []})
    )
    order = {name: i for i, name in enumerate(PROPERTY_ORDER)}
    ranks = pc.index_in(pa.array(props["property"], pa.string()), pa.array(list(order)))
    props["rank"] = pc.fill_null(ranks, len(order)).to_numpy()  # any other property: last
    props = props.sort_values(["row", "rank"], kind="stable")
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

    # --- designations -----------------------------------------------------------------
    step("designations")
    names: list[pd.DataFrame] = []
    languages = ["en-US"]

    def name(row: np.ndarray, language: str, use: str, value: pd.Series) -> None:
        keep = (row >= 0) & (value.astype(str) != "").to_numpy()
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

    for column in _TERM_NAMES:
        if column in loinc.columns:
            name(term_rows, "en-US", column, loinc[column])
    name(term_rows, "en-US", FSN, fsn)
    name(part_rows, "en-US", "PartName", part["PartName"])
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

    # --- answer lists -----------------------------------------------------------------
    step("answer lists")
    listed = answers[answers["AnswerStringId"] != ""]
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
    links_table = pd.DataFrame(
        {"term": rows(answer_links["LoincNumber"]), "list": rows(answer_links["AnswerListId"])}
    ).sort_values(["term", "list"], kind="stable")
    write_table(
        pa.table({k: pa.array(links_table[k].to_numpy(np.int32)) for k in links_table.columns}),
        out / "answer_links.arrow",
    )

    # --- the component hierarchy ------------------------------------------------------
    step("component hierarchy")
    edges = tree[tree["IMMEDIATE_PARENT"] != ""]
    child, parent = rows(edges["CODE"]), rows(edges["IMMEDIATE_PARENT"])
    keep = (child >= 0) & (parent >= 0)
    Closure.build(n, child[keep], parent[keep]).save(out)
    write_table(concepts, out / "concepts.arrow")
    kinds = np.bincount(concepts.column("kind").to_numpy(), minlength=len(KINDS))
    return {
        "system": LOINC,
        "version": _version(loinc),
        "concepts": n,
        **{f"{kind}s": int(count) for kind, count in zip(KINDS, kinds, strict=True)},
        "languages": languages,
        "properties": sorted(set(props["property"]) | set(CODING_PROPERTIES)),
        "sources": [label(f) for f in found],
    }


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
