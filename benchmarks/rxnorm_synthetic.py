"""Write a synthetic RxNorm full release (RRF, NLM's layout and column order) with the shape
and size of a real one: about 300,000 RXCUIs with RXNORM atoms (IN, BN, SCDC, SCDF, SCD, SBD,
DF, with SY/PSN synonyms), as many atoms of other sources, millions of relationships and
attributes (most of them RXNORM's: has_ingredient/ingredient_of, consists_of/constitutes,
tradename_of/has_tradename, has_dose_form/dose_form_of; NDC, RXN_HUMAN_DRUG …) and a
RXNCUI.RRF of retired RXCUIs, most of them remapped.

    .venv/bin/python benchmarks/rxnorm_synthetic.py /tmp/RxNorm_full_01062025 --concepts 300000
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

#: Share of each term type among the RXCUIs (roughly a real release's).
SHARES = {
    "IN": 0.05,
    "BN": 0.08,
    "SCDC": 0.12,
    "SCDF": 0.07,
    "DF": 0.002,
    "SCD": 0.33,
    "SBD": 0.348,
}


def generate(folder: Path, concepts: int = 300_000, seed: int = 7) -> Path:
    """Write the release into ``folder`` (``rrf/*.RRF`` and the readme); returns it."""
    rng = np.random.default_rng(seed)
    rrf = folder / "rrf"
    rrf.mkdir(parents=True, exist_ok=True)
    (folder / "Readme_full_01062025.txt").write_text("Synthetic RxNorm full release\n")
    ids = np.sort(rng.choice(np.arange(100, concepts * 12), size=concepts, replace=False))
    kinds = rng.choice(list(SHARES), size=concepts, p=np.array(list(SHARES.values())) / 1.0)
    by_kind = {k: ids[kinds == k] for k in SHARES}
    aui = iter(range(10_000_000, 99_000_000))

    with open(rrf / "RXNCONSO.RRF", "w", newline="") as out:
        for cui, kind in zip(ids.tolist(), kinds.tolist(), strict=True):
            name = f"{kind.lower()} drug {cui} 10 MG Oral Tablet"
            a = next(aui)
            out.write(f"{cui}|ENG||||||{a}|{a}|{cui}||RXNORM|{kind}|{cui}|{name}||N|4096|\n")
            if kind in ("SCD", "SBD", "IN"):
                synonym = f"{name} (synonym)"
                out.write(f"{cui}|ENG||||||{next(aui)}||||RXNORM|SY|{cui}|{synonym}||N||\n")
            if kind == "SCD":
                out.write(f"{cui}|ENG||||||{next(aui)}||||RXNORM|PSN|{cui}|{name}||N|4096|\n")
            for sab in ("MMSL", "VANDF") if kind in ("SCD", "SBD") else ():
                out.write(f"{cui}|ENG||||||{next(aui)}||||{sab}|CD|X{cui}|{name.upper()}||N||\n")

    def pairs(src: np.ndarray, dst: np.ndarray, per: int) -> tuple[np.ndarray, np.ndarray]:
        s = np.repeat(src, per)
        return s, rng.choice(dst, size=len(s))

    links = [
        ("has_ingredient", "ingredient_of", *pairs(by_kind["SCDC"], by_kind["IN"], 1)),
        ("consists_of", "constitutes", *pairs(by_kind["SCD"], by_kind["SCDC"], 2)),
        ("has_dose_form", "dose_form_of", *pairs(by_kind["SCD"], by_kind["DF"], 1)),
        ("tradename_of", "has_tradename", *pairs(by_kind["SBD"], by_kind["SCD"], 1)),
        ("has_ingredient", "ingredient_of", *pairs(by_kind["SBD"], by_kind["BN"], 1)),
        ("isa", "inverse_isa", *pairs(by_kind["SCD"], by_kind["SCDF"], 1)),
        ("has_ingredient", "ingredient_of", *pairs(by_kind["SCDF"], by_kind["IN"], 1)),
    ]
    rui = iter(range(1, 99_000_000))
    with open(rrf / "RXNREL.RRF", "w", newline="") as out:
        for rela, inverse, src, dst in links:
            for a, b in zip(src.tolist(), dst.tolist(), strict=True):
                # RXCUI2 has RELA to RXCUI1
                out.write(f"{b}||CUI|RO|{a}||CUI|{rela}|R{next(rui)}||RXNORM|RXNORM|||N||\n")
                out.write(f"{a}||CUI|RO|{b}||CUI|{inverse}|R{next(rui)}||RXNORM|RXNORM|||N||\n")
        scd = by_kind["SCD"]
        for a, b in zip(scd.tolist(), rng.choice(ids, len(scd)).tolist(), strict=True):
            out.write(f"{b}||CUI|RO|{a}||CUI|may_treat|R{next(rui)}||MEDRT|MEDRT|||N||\n")

    with open(rrf / "RXNSAT.RRF", "w", newline="") as out:
        for cui in np.concatenate([by_kind["SCD"], by_kind["SBD"]]).tolist():
            out.write(f"{cui}|||{cui}|AUI|{cui}|AT{cui}||RXN_HUMAN_DRUG|RXNORM|US|N|4096|\n")
            for k in range(3):
                ndc = f"{cui % 99999:05d}{k:06d}"
                out.write(f"{cui}|||{cui}|AUI|{cui}|AT{cui}{k}||NDC|RXNORM|{ndc}|N|4096|\n")
            out.write(f"{cui}|||{cui}|AUI|X{cui}|AV{cui}||DCSA|MMSL|0|N||\n")

    retired = np.arange(concepts * 12, concepts * 12 + concepts // 3)
    with open(rrf / "RXNCUI.RRF", "w", newline="") as out:
        for old in retired.tolist():
            new = int(rng.choice(ids)) if old % 5 else old
            out.write(f"{old}|2010AA|01022023|1|{new}|\n")
    return folder


def main() -> None:
    """Command line: the folder and the number of RXCUIs."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--concepts", type=int, default=300_000)
    args = parser.parse_args()
    generate(args.folder, args.concepts)


if __name__ == "__main__":
    main()
