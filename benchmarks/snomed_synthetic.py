"""Write a synthetic SNOMED CT RF2 Snapshot release with the shape and size of the
International Edition: about 370,000 concepts, 1.6 million descriptions, 3 million active
relationships (about 600,000 inferred is-a, the rest attributes in groups), US and GB
English language refsets, a few simple refsets, historical associations for the inactive
concepts, MRCM rules, concrete values and a module dependency refset.

The hierarchy is a random DAG under ``138875005`` with the real top-level concepts;
``404684003 |Clinical finding|`` holds about 120,000 descendants. Each concept takes one
parent (a second with probability 0.5) among the earlier concepts of its hierarchy, so
depths come out about 10-15 like the real release. Terms are made of random words.

    .venv/bin/python benchmarks/snomed_synthetic.py /tmp/sct-synthetic [--scale 1.0]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

TIME = "20250131"
CORE = 900000000000207008
META = 900000000000012004
ROOT = 138875005
IS_A = 116680003
FINDING = 404684003
TOPS = {
    FINDING: 0.33,
    71388002: 0.15,  # procedure
    123037004: 0.10,  # body structure
    410607006: 0.10,  # organism
    105590001: 0.07,  # substance
    373873005: 0.08,  # pharmaceutical / biologic product
    363787002: 0.05,  # observable entity
    243796009: 0.03,  # situation
    260787004: 0.03,  # physical object
    272379006: 0.02,  # event
    48176007: 0.01,  # social context
    362981000: 0.02,  # qualifier value
    49755003: 0.01,  # morphologic abnormality (under body structure in reality)
}
ATTRIBUTE_ROOT = 410662002
ATTRIBUTES = [363698007, 116676008, 246075003, 370135005, 42752001, 263502005, 246454002]
EXTRA_ATTRIBUTES = 43
WORDS = (
    "acute chronic left right upper lower anterior posterior structure disorder finding "
    "heart lung liver kidney bone skin blood cell tissue muscle nerve vessel artery vein "
    "infection inflammation fracture lesion neoplasm benign malignant congenital acquired "
    "pain swelling mass cyst ulcer injury procedure excision repair biopsy imaging therapy "
    "drug tablet capsule oral injection dose substance organism bacteria virus fungus "
    "observable measurement level concentration rate volume pressure temperature index"
)


def sctid(n: np.ndarray, partition: str) -> np.ndarray:
    """Distinct synthetic SCTIDs (``{n}{partition}{check}``; the check digit is not
    Verhoeff's, the reader does not care)."""
    return np.array([int(f"{v}{partition}{v % 10}") for v in n.tolist()], dtype=np.int64)


def _write(path: Path, frame: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, sep="\t", index=False, lineterminator="\r\n")


def generate(out: Path, scale: float = 1.0, seed: int = 20250131) -> dict[str, int]:
    """Write the release under ``out``; return its counts."""
    rng = np.random.default_rng(seed)
    n = int(370_000 * scale)
    fixed = np.array(
        [ROOT, *TOPS, ATTRIBUTE_ROOT, IS_A, *ATTRIBUTES, 900000000000441003], dtype=np.int64
    )
    generated = sctid(np.arange(1_000_001, 1_000_001 + n - len(fixed)), "00")
    ids = np.concatenate([fixed, generated])
    extra_attr = generated[:EXTRA_ATTRIBUTES]
    attributes = np.concatenate([np.array(ATTRIBUTES), extra_attr])
    # hierarchy: every generated concept joins one top-level hierarchy (attributes first)
    top_list = np.array(list(TOPS), dtype=np.int64)
    weights = np.array(list(TOPS.values()))
    rest = generated[EXTRA_ATTRIBUTES:]
    hierarchy = rng.choice(len(top_list), size=len(rest), p=weights / weights.sum())
    child_parts, parent_parts = (
        [np.array(list(TOPS)), np.array([ATTRIBUTE_ROOT])],
        [
            np.full(len(TOPS), ROOT),
            np.array([900000000000441003]),
        ],
    )
    child_parts += [np.array([IS_A, *ATTRIBUTES]), extra_attr, np.array([900000000000441003])]
    parent_parts += [
        np.full(1 + len(ATTRIBUTES), ATTRIBUTE_ROOT),
        np.full(EXTRA_ATTRIBUTES, ATTRIBUTE_ROOT),
        np.array([ROOT]),
    ]
    members_of: dict[int, np.ndarray] = {}
    for h, top in enumerate(top_list):
        members = rest[hierarchy == h]
        members_of[int(top)] = members
        pool = np.concatenate([[top], members])
        k = len(members)
        # parent index uniformly among the earlier members (index 0 is the top concept)
        position = np.arange(1, k + 1)
        first = (rng.random(k) * position).astype(np.int64)
        second = (rng.random(k) * position).astype(np.int64)
        two = (rng.random(k) < 0.5) & (second != first)
        child_parts += [members, members[two]]
        parent_parts += [pool[first], pool[second[two]]]
    child = np.concatenate(child_parts)
    parent = np.concatenate(parent_parts)
    isa = len(child)
    # attributes: fill up to 3M relationships, destinations in body structure / morphology /
    # substance / organism, sources in findings, procedures and products
    total_rel = int(3_150_000 * scale)  # about 3M once inactive sources are dropped
    n_attr = total_rel - isa
    sources = np.concatenate([members_of[FINDING], members_of[71388002], members_of[373873005]])
    destinations = np.concatenate(
        [members_of[123037004], members_of[49755003], members_of[105590001], members_of[410607006]]
    )
    a_src = np.sort(rng.choice(sources, size=n_attr))
    a_type = rng.choice(attributes, size=n_attr, p=_zipf(len(attributes)))
    a_dst = rng.choice(destinations, size=n_attr)
    a_group = rng.integers(0, 4, size=n_attr)
    rel_ids = sctid(np.arange(1, isa + n_attr + 1), "02")
    rels = pd.DataFrame(
        {
            "id": rel_ids,
            "effectiveTime": TIME,
            "active": 1,
            "moduleId": CORE,
            "sourceId": np.concatenate([child, a_src]),
            "destinationId": np.concatenate([parent, a_dst]),
            "relationshipGroup": np.concatenate([np.zeros(isa, dtype=np.int64), a_group]),
            "typeId": np.concatenate([np.full(isa, IS_A), a_type]),
            "characteristicTypeId": 900000000000011006,
            "modifierId": 900000000000451002,
        }
    )
    # concepts: 5% inactive (among the generated ones), 30% sufficiently defined
    active = np.ones(len(ids), dtype=np.int8)
    inactive = rng.choice(
        np.arange(len(fixed) + EXTRA_ATTRIBUTES, len(ids)), size=n // 20, replace=False
    )
    active[inactive] = 0
    keep = np.isin(rels["sourceId"].to_numpy(), ids[inactive], invert=True)
    rels = rels[keep]
    defined = np.where(rng.random(len(ids)) < 0.3, 900000000000073002, 900000000000074008)
    concepts = pd.DataFrame(
        {
            "id": ids,
            "effectiveTime": TIME,
            "active": active,
            "moduleId": CORE,
            "definitionStatusId": defined,
        }
    )
    # descriptions: FSN + preferred synonym + on average 2.3 more synonyms
    words = np.array(WORDS.split(" "))
    counts = 2 + rng.poisson(2.3, size=len(ids))
    d_concept = np.repeat(ids, counts)
    nd = len(d_concept)
    first_of = np.concatenate([[0], np.cumsum(counts)[:-1]])
    kind = np.full(nd, 900000000000013009, dtype=np.int64)
    kind[first_of] = 900000000000003001
    w = rng.integers(0, len(words), size=(nd, 3))
    terms = pd.Series(words[w[:, 0]]).str.cat(
        pd.concat([pd.Series(words[w[:, 1]]), pd.Series(words[w[:, 2]])], axis=1), sep=" "
    )
    terms = terms.str.capitalize() + " " + pd.Series(d_concept.astype(str)).str[-5:]
    terms = terms.where(kind != 900000000000003001, terms + " (finding)")
    d_ids = sctid(np.arange(1, nd + 1), "01")
    descriptions = pd.DataFrame(
        {
            "id": d_ids,
            "effectiveTime": TIME,
            "active": 1,
            "moduleId": CORE,
            "conceptId": d_concept,
            "languageCode": "en",
            "typeId": kind,
            "term": terms.to_numpy(),
            "caseSignificanceId": 900000000000448009,
        }
    )
    preferred = np.zeros(nd, dtype=bool)
    preferred[first_of] = True
    preferred[first_of + 1] = True
    acceptability = np.where(preferred, 900000000000548007, 900000000000549004)
    language = pd.DataFrame(
        {
            "id": [f"00000000-0000-4000-8000-{i:012d}" for i in range(2 * nd)],
            "effectiveTime": TIME,
            "active": 1,
            "moduleId": CORE,
            "refsetId": np.repeat([900000000000509007, 900000000000508004], nd),
            "referencedComponentId": np.tile(d_ids, 2),
            "acceptabilityId": np.tile(acceptability, 2),
        }
    )
    # refsets: three simple refsets of 10,000 members; REPLACED BY for every inactive concept
    simple_ids = [723264001, 734138000, 447562003]
    simple = pd.DataFrame(
        {
            "id": [f"10000000-0000-4000-8000-{i:012d}" for i in range(30_000)],
            "effectiveTime": TIME,
            "active": 1,
            "moduleId": CORE,
            "refsetId": np.repeat(simple_ids, 10_000),
            "referencedComponentId": rng.choice(ids[active == 1], size=30_000),
        }
    )
    association = pd.DataFrame(
        {
            "id": [f"20000000-0000-4000-8000-{i:012d}" for i in range(len(inactive))],
            "effectiveTime": TIME,
            "active": 1,
            "moduleId": CORE,
            "refsetId": 900000000000526001,
            "referencedComponentId": ids[inactive],
            "targetComponentId": rng.choice(ids[active == 1], size=len(inactive)),
        }
    )
    concrete = pd.DataFrame(
        {
            "id": sctid(np.arange(1, 50_001), "02") + 7,
            "effectiveTime": TIME,
            "active": 1,
            "moduleId": CORE,
            "sourceId": rng.choice(members_of[373873005], size=50_000),
            "value": "#" + pd.Series(rng.integers(1, 1000, size=50_000)).astype(str),
            "relationshipGroup": 1,
            "typeId": 1142135004,
            "characteristicTypeId": 900000000000011006,
            "modifierId": 900000000000451002,
        }
    )
    dependency = pd.DataFrame(
        {
            "id": ["50000000-0000-4000-8000-000000000001"],
            "effectiveTime": TIME,
            "active": 1,
            "moduleId": CORE,
            "refsetId": 900000000000534007,
            "referencedComponentId": META,
            "sourceEffectiveTime": TIME,
            "targetEffectiveTime": TIME,
        }
    )
    term, ref = out / "Snapshot" / "Terminology", out / "Snapshot" / "Refset"
    _write(term / f"sct2_Concept_Snapshot_INT_{TIME}.txt", concepts)
    _write(term / f"sct2_Description_Snapshot-en_INT_{TIME}.txt", descriptions)
    _write(term / f"sct2_Relationship_Snapshot_INT_{TIME}.txt", rels)
    _write(term / f"sct2_RelationshipConcreteValues_Snapshot_INT_{TIME}.txt", concrete)
    _write(ref / "Language" / f"der2_cRefset_LanguageSnapshot-en_INT_{TIME}.txt", language)
    _write(ref / "Content" / f"der2_Refset_SimpleSnapshot_INT_{TIME}.txt", simple)
    _write(ref / "Content" / f"der2_cRefset_AssociationSnapshot_INT_{TIME}.txt", association)
    _write(ref / "Metadata" / f"der2_ssRefset_ModuleDependencySnapshot_INT_{TIME}.txt", dependency)
    return {
        "concepts": len(concepts),
        "descriptions": len(descriptions),
        "relationships": len(rels),
        "language rows": len(language),
    }


def _zipf(k: int) -> np.ndarray:
    p = 1.0 / np.arange(1, k + 1)
    return p / p.sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    started = time.perf_counter()
    counts = generate(args.out, args.scale)
    print(counts, f"written in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
