"""SNOMED CT as a code system: look-up properties, displays by dialect, designations,
filters, implicit value sets and historical associations (Python level)."""

from __future__ import annotations

import numpy as np
import pytest
import snomed_rf2
from snomed_rf2 import opened

from workbench.errors import (
    ExpressionSyntaxError,
    InvalidRequestError,
    UnknownCodeError,
    UnsupportedFilterError,
)
from workbench.releases.snomed.codesystem import SnomedCT
from workbench.releases.snomed.loader import KIND

SCT = "http://snomed.info/sct"


@pytest.fixture(scope="module")
def sct(tmp_path_factory: pytest.TempPathFactory) -> SnomedCT:
    root = tmp_path_factory.mktemp("cs")
    cs, _ = opened(KIND.load(snomed_rf2.write(root / "rel"), root / "cache"))
    return cs


def codes(sct: SnomedCT, mask: np.ndarray | None) -> set[str]:
    assert mask is not None
    return {str(sct.store.ids[r]) for r in np.flatnonzero(mask)}


def test_lookup_properties(sct: SnomedCT) -> None:
    found = sct.lookup("22298006")
    assert found.display == "Myocardial infarction"
    assert found.version == snomed_rf2.VERSION
    assert found.name == f"http://snomed.info/sct|{snomed_rf2.VERSION}"  # as tx.fhir.org (f11)
    props = found.properties
    assert ("inactive", False) in props
    assert ("sufficientlyDefined", True) in props
    assert ("moduleId", snomed_rf2.CORE) in props
    assert ("effectiveTime", snomed_rf2.TIME) in props
    assert ("parent", "56265001") in props and ("child", "57054005") in props
    assert ("363698007", "80891009") in props and ("116676008", "55641003") in props
    assert ("normalForm", "=== 56265001:{363698007=80891009,116676008=55641003}") in props
    typed = dict(found.typed_properties)
    assert typed["363698007"].key == "valueCode"


def test_lookup_concrete_values_and_selected_properties(sct: SnomedCT) -> None:
    found = sct.lookup("322236009", properties=["1142135004", "parent"])
    assert found.properties == (("parent", "373873005"), ("1142135004", 500))
    assert dict(found.typed_properties)["1142135004"].key == "valueInteger"
    assert found.designations == ()


def test_lookup_of_an_inactive_concept_offers_its_replacement(sct: SnomedCT) -> None:
    found = sct.lookup("307530000")
    assert ("inactive", True) in found.properties
    assert ("900000000000526001", "22298006") in found.properties
    assert sct.replacements(sct.row("307530000")) == "REPLACED BY 22298006 |Myocardial infarction|"


def test_unknown_codes(sct: SnomedCT) -> None:
    with pytest.raises(UnknownCodeError, match="Unknown code '123456789'"):
        sct.lookup("123456789")
    with pytest.raises(UnknownCodeError):
        sct.subsumes("22298006", "not-a-code")


def test_designations_with_use_and_language(sct: SnomedCT) -> None:
    found = sct.lookup("22298006").designations
    fsn = [d for d in found if d["use"]["code"] == "900000000000003001"]
    assert fsn == [
        {
            "language": "en",
            "use": {"system": SCT, "code": "900000000000003001", "display": "Fully specified name"},
            "value": "Myocardial infarction (disorder)",
        }
    ]
    synonyms = {d["value"] for d in found if d["use"]["code"] == "900000000000013009"}
    assert synonyms == {"Myocardial infarction", "Heart attack", "Cardiac infarction"}
    assert "Tumour mass" not in {d["value"] for d in sct.lookup("4147007").designations}


@pytest.mark.parametrize(
    ("language", "display"),
    [
        (None, "Anemia"),
        ("en-US", "Anemia"),
        ("en-GB", "Anaemia"),
        ("en", "Anemia"),
        ("fr", "Anemia"),
    ],
)
def test_display_in_a_dialect(sct: SnomedCT, language: str | None, display: str) -> None:
    assert sct.lookup("271737000", display_language=language).display == display


@pytest.mark.parametrize(
    ("prop", "op", "value", "expected"),
    [
        ("concept", "is-a", "49601007", {"49601007", "56265001", "22298006", "57054005"}),
        ("concept", "descendent-of", "49601007", {"56265001", "22298006", "57054005"}),
        ("concept", "in", "723264001", {"39607008", "80891009"}),
        ("concept", "=", "22298006", {"22298006"}),
        (
            "concept",
            "generalizes",
            "56265001",
            {"56265001", "49601007", "64572001", "404684003", "138875005"},
        ),
        (
            "constraint",
            "=",
            "< 404684003 : 363698007 = << 80891009",
            {"56265001", "22298006", "57054005"},
        ),
        (
            "expression",
            "=",
            "64572001 : 363698007 = 80891009",
            {"56265001", "22298006", "57054005"},
        ),
        ("expression", "=", "<< 56265001", {"56265001", "22298006", "57054005"}),
        ("parent", "=", "56265001", {"22298006"}),
        ("child", "=", "22298006", {"56265001"}),
        ("inactive", "=", "true", {"307530000"}),
        ("363698007", "=", "39607008", {"195967001"}),
    ],
)
def test_filters(sct: SnomedCT, prop: str, op: str, value: str, expected: set[str]) -> None:
    assert codes(sct, sct.filter(prop, op, value)) == expected


@pytest.mark.parametrize(
    ("prop", "op", "value", "error"),
    [
        ("concept", "regex", "22.*", UnsupportedFilterError),
        ("constraint", "in", "<< 22298006", UnsupportedFilterError),
        ("colour", "=", "red", UnsupportedFilterError),
        ("constraint", "=", "<< 22298006 AND", ExpressionSyntaxError),
    ],
)
def test_bad_filters(sct: SnomedCT, prop: str, op: str, value: str, error: type) -> None:
    with pytest.raises(error):
        sct.filter(prop, op, value)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"{SCT}?fhir_vs=isa/49601007", {"49601007", "56265001", "22298006", "57054005"}),
        (f"{SCT}?fhir_vs=refset/723264001", {"39607008", "80891009"}),
        (f"{SCT}?fhir_vs=refset", {"723264001", "900000000000526001"}),
        (f"{SCT}?fhir_vs=ecl/%3C%3C%2049601007", {"49601007", "56265001", "22298006", "57054005"}),
        (f"{SCT}?fhir_vs=ecl/<! 64572001", {"49601007", "195967001", "271737000"}),
        (
            f"{SCT}/{snomed_rf2.CORE}/version/{snomed_rf2.TIME}?fhir_vs=isa/56265001",
            {"56265001", "22298006", "57054005"},
        ),
    ],
)
def test_implicit_value_sets(sct: SnomedCT, url: str, expected: set[str]) -> None:
    assert codes(sct, sct.implicit(url)) == expected


def test_the_whole_system_implicit_value_set(sct: SnomedCT) -> None:
    assert codes(sct, sct.implicit(f"{SCT}?fhir_vs")) == set(snomed_rf2.CONCEPTS) - {"307530000"}
    assert sct.implicit("http://loinc.org/vs") is None
    with pytest.raises(InvalidRequestError, match="not a SNOMED CT implicit value set"):
        sct.implicit(f"{SCT}?fhir_vs=members/1")


def test_associations_for_implicit_concept_maps(sct: SnomedCT) -> None:
    frame = sct.associations()
    assert list(frame.columns) == ["source", "target", "refsetId", "active"]
    rows = {tuple(r) for r in frame.itertuples(index=False)}
    assert rows == {
        ("307530000", "22298006", "900000000000526001", True),
        ("195967001", "64572001", "900000000000526001", False),
    }


def test_subsumption_of_expressions_by_their_focus(sct: SnomedCT) -> None:
    assert sct.subsumes("49601007", "56265001 : 363698007 = 80891009") == "subsumes"
    assert sct.subsumes("56265001 : 363698007 = 80891009", "64572001") == "subsumed-by"


# --- the provider the engine sees ------------------------------------------------------------


def test_provider_concepts_on_demand(sct: SnomedCT) -> None:
    from workbench.releases.snomed.provider import SnomedProvider

    provider = SnomedProvider(sct)
    concept = provider.get("22298006")
    assert concept is not None and concept.display == "Myocardial infarction"
    assert provider.get("22298006") is concept  # touched concepts are remembered
    assert concept.displays() == [
        "Myocardial infarction",
        "Myocardial infarction (disorder)",
        "Heart attack",
        "Cardiac infarction",
    ]
    assert provider.get("64572001 : 363698007 = 80891009") is None
    assert "307530000" in provider and "1" not in provider and len(provider) == 26
    assert provider.get("307530000").inactive  # type: ignore[union-attr]
    assert provider.descendants("56265001") == {"22298006", "57054005"}
    assert provider.ancestors("56265001") == {"49601007", "64572001", "404684003", "138875005"}
    assert [c.code for c in provider.in_order({"57054005", "22298006", "nope"})] == [
        "22298006",
        "57054005",
    ]
    assert provider.resource["version"] == snomed_rf2.VERSION


def test_provider_filters_test_masks(sct: SnomedCT) -> None:
    from workbench.releases.snomed.provider import SnomedProvider

    provider = SnomedProvider(sct)
    compiled = provider.compile_filter(
        {"property": "constraint", "op": "=", "value": "<< 56265001"}
    )
    assert compiled.candidates == {"56265001", "22298006", "57054005"}
    heart = provider.get("22298006")
    asthma = provider.get("195967001")
    assert heart is not None and asthma is not None
    assert compiled.matches(heart) and not compiled.matches(asthma)


def test_provider_checks_expressions(sct: SnomedCT) -> None:
    from workbench.releases.snomed.provider import SnomedProvider

    provider = SnomedProvider(sct)
    assert provider.is_expression("64572001 : 363698007 = 80891009")
    assert not provider.is_expression("64572001")
    assert provider.validate_expression("64572001 : 363698007 = 80891009") == (
        True,
        None,
        ["64572001"],
    )
    ok, message, focus = provider.validate_expression("64572001 : 363698007 = 322236009")
    assert not ok and "outside its MRCM range" in str(message) and focus == ["64572001"]
    assert provider.inactive_note("307530000") == "REPLACED BY 22298006 |Myocardial infarction|"


def test_provider_has_the_code_system_provider_surface(sct: SnomedCT) -> None:
    from workbench.releases.snomed.provider import SnomedProvider
    from workbench.terminology.provider import CodeSystemProvider

    provider = SnomedProvider(sct)
    assert isinstance(provider, CodeSystemProvider)
    assert dict(provider.concepts.items())["22298006"].display == "Myocardial infarction"
