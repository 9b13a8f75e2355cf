"""The code systems FHIR binds to that no package ships, built in: BCP-47 language tags,
BCP-13 media types, ISO 3166 (countries, subdivisions) and ISO 4217 (currencies), in
Python and over HTTP, with R4's own value sets over them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest
from conftest import EXAMPLES
from http_support import TOKEN, assert_outcome, client, values

from workbench import Workbench
from workbench.server.embedded import ServerHandle

BCP47 = "urn:ietf:bcp:47"
BCP13 = "urn:ietf:bcp:13"
ISO3166 = "urn:iso:std:iso:3166"
ISO3166_2 = "urn:iso:std:iso:3166:-2"
ISO4217 = "urn:iso:std:iso:4217"
R4 = "http://hl7.org/fhir/ValueSet/"

#: (system, code, valid, display, normalized-code, part of the message when invalid)
CASES = [
    (BCP47, "en-US", True, "English (United States)", None, None),
    (BCP47, "EN-us", True, "English (United States)", "en-US", None),
    (BCP47, "zh-hant-tw", True, "Chinese (Traditional, Taiwan)", "zh-Hant-TW", None),
    (
        BCP47,
        "sl-rozaj-biske",
        True,
        "Slovenian (Resian, The San Giorgio dialect of Resian)",
        None,
        None,
    ),
    (BCP47, "de-DE-u-co-phonebk", True, "German (Germany)", None, None),
    (BCP47, "en-Latn-US-t-de", True, "English (United States)", None, None),
    (BCP47, "i-klingon", True, "Klingon", None, None),
    (BCP47, "EN-gb-OED", True, "English, Oxford English Dictionary spelling", "en-GB-oed", None),
    (BCP47, "x-whatever", True, "Private use (x-whatever)", None, None),
    (BCP47, "en-x-foo", True, "English", None, None),
    (BCP47, "zz", False, None, None, "language subtag 'zz' is not in the IANA registry"),
    (BCP47, "en-USA", False, None, None, "extended language subtag 'usa'"),
    (BCP47, "en-OO", False, None, None, "region subtag 'oo'"),
    (BCP47, "de-1996-1996", False, None, None, "variant subtag is repeated"),
    (BCP47, "en-a-bb-a-cc", False, None, None, "singleton is repeated"),
    (BCP47, "en_US", False, None, None, "not a well-formed language tag"),
    (BCP47, "en-" + "abcdefgh-" * 21 + "a", False, None, None, "not a well-formed"),
    (BCP47, "en-x-" + "-".join(["abcdefgh"] * 28), False, None, None, "at most 255"),
    (BCP13, "application/pdf", True, "application/pdf", None, None),
    (
        BCP13,
        "Text/Plain;charset=UTF-8",
        True,
        "text/plain; charset=UTF-8",
        "text/plain; charset=UTF-8",
        None,
    ),
    (BCP13, 'text/plain; format="a b"', True, 'text/plain; format="a b"', None, None),
    (BCP13, "application/fhir+json", True, "application/fhir+json", None, None),
    (BCP13, "foo/bar", False, None, None, "'foo' is no registered top-level media type"),
    (BCP13, "application", False, None, None, "not a media type"),
    (BCP13, "text/plain; charset", False, None, None, "its parameters"),
    (BCP13, "text/plain; a=b c", False, None, None, "its parameters"),
    (BCP13, "text/" + "a" * 200, False, None, None, "not a media type"),
    (BCP13, "text/plain" + "; a=b" * 300, False, None, None, "at most 1024"),
    (BCP13, 'text/plain; a="unclosed', False, None, None, "its parameters"),
    (ISO3166, "US", True, "United States", None, None),
    (ISO3166, "us", True, "United States", "US", None),
    (ISO3166, "USA", True, "United States", None, None),
    (ISO3166, "840", True, "United States", None, None),
    (ISO3166, "XX", False, None, None, "Unknown code 'XX'"),
    (ISO3166_2, "US-CA", True, "California", None, None),
    (ISO3166_2, "gb-lnd", True, "London, City of", "GB-LND", None),
    (ISO3166_2, "US-XX", False, None, None, "Unknown code"),
    (ISO4217, "EUR", True, "Euro", None, None),
    (ISO4217, "usd", True, "US Dollar", "USD", None),
    (ISO4217, "EURO", False, None, None, "Unknown code"),
]


@pytest.fixture(scope="module")
def wb(package_dirs: dict[str, Path]) -> Workbench:
    bench = Workbench()
    bench.load(package_dirs[EXAMPLES[0]], progress=False)
    return bench


@pytest.mark.parametrize(("system", "code", "valid", "display", "normalized", "why"), CASES)
def test_validate_in_codesystem(
    wb: Workbench,
    system: str,
    code: str,
    valid: bool,
    display: str | None,
    normalized: str | None,
    why: str | None,
) -> None:
    found = wb.validate_in_codesystem(system, code=code)
    assert found.result is valid, found.message
    assert found.display == display
    assert found.normalized_code == normalized
    if why is not None:
        assert why in str(found.message)


@pytest.mark.parametrize(
    ("url", "system", "code", "valid"),
    [
        (R4 + "mimetypes", BCP13, "application/pdf", True),
        (R4 + "mimetypes", BCP13, "pdf", False),
        (R4 + "all-languages", BCP47, "en-US", True),
        (R4 + "all-languages", BCP47, "klingon", False),
        (R4 + "languages", BCP47, "en-US", True),
        (R4 + "currencies", ISO4217, "EUR", True),
        (R4 + "currencies", ISO4217, "XYZ", False),
        (R4 + "jurisdiction", ISO3166, "US", True),
        (R4 + "jurisdiction", ISO3166_2, "US-CA", True),
        (R4 + "iso3166-1-2", ISO3166, "US", True),
        (R4 + "iso3166-1-2", ISO3166, "USA", False),
    ],
)
def test_r4_valuesets_validate(
    wb: Workbench, url: str, system: str, code: str, valid: bool
) -> None:
    found = wb.validate_code(url, system=system, code=code)
    assert found.result is valid, found.message


@pytest.mark.parametrize(
    ("url", "size"), [("currencies", 178), ("iso3166-1-2", 249), ("languages", 56)]
)
def test_r4_finite_valuesets_expand(wb: Workbench, url: str, size: int) -> None:
    expansion = wb.expand(R4 + url)
    shown = {e.code: e.display for e in expansion.entries}
    assert len(shown) >= size - 5
    wanted = {"currencies": ("EUR", "Euro"), "iso3166-1-2": ("FR", "France")}
    code, display = wanted.get(url, ("en-US", "English (United States)"))
    assert shown[code] == display


@pytest.mark.parametrize("url", ["mimetypes", "all-languages"])
def test_grammar_valuesets_do_not_expand(wb: Workbench, url: str) -> None:
    from workbench import TooCostlyError

    with pytest.raises(TooCostlyError, match="grammar"):
        wb.expand(R4 + url)


@pytest.mark.parametrize(
    ("system", "code", "display"),
    [
        (BCP47, "de-CH", "German (Switzerland)"),
        (BCP13, "image/png", "image/png"),
        (ISO3166, "DE", "Germany"),
        (ISO3166_2, "DE-BY", "Bayern"),
        (ISO4217, "JPY", "Yen"),
    ],
)
def test_lookup(wb: Workbench, system: str, code: str, display: str) -> None:
    assert wb.lookup(system=system, code=code).display == display


@pytest.mark.parametrize(
    ("system", "a", "b", "outcome"),
    [
        (ISO3166_2, "GB-ENG", "GB-LND", "subsumes"),
        (ISO3166_2, "GB-LND", "GB-ENG", "subsumed-by"),
        (ISO3166_2, "US-CA", "US-NY", "not-subsumed"),
        (BCP47, "en-us", "EN-US", "equivalent"),
        (BCP47, "en", "en-US", "not-subsumed"),
    ],
)
def test_subsumes(wb: Workbench, system: str, a: str, b: str, outcome: str) -> None:
    assert wb.subsumes(system=system, code_a=a, code_b=b) == outcome


@pytest.mark.parametrize(
    ("url", "system", "codes", "expected"),
    [
        (
            R4 + "all-languages",
            BCP47,
            ["en-US", "zz", "EN-us", None, "fr"],
            [True, False, True, None, True],
        ),
        (R4 + "currencies", ISO4217, ["EUR", "XYZ", "usd"], [True, False, True]),
        (R4 + "iso3166-1-2", ISO3166, ["US", "USA", "FR"], [True, False, True]),
    ],
)
def test_validate_column(
    wb: Workbench, url: str, system: str, codes: list[str | None], expected: list[bool | None]
) -> None:
    frame = wb.validate_column(pd.Series(codes * 100), url, system=system)
    got = [None if pd.isna(v) else bool(v) for v in frame["result"]]
    assert got[: len(codes)] == expected


def test_capabilities_list_the_builtin_systems(wb: Workbench, http: httpx.Client) -> None:
    body = http.get("/metadata", params={"mode": "terminology"}).json()
    listed = {c["uri"]: c for c in body["codeSystem"]}
    for system in (BCP47, BCP13, ISO3166, ISO3166_2, ISO4217):
        assert system in listed
    assert listed[BCP47]["version"][0]["code"]


# --- HTTP ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(wb: Workbench) -> Iterator[ServerHandle]:
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def http(server: ServerHandle) -> Iterator[httpx.Client]:
    with client(server.url) as c:
        yield c


@pytest.mark.parametrize(("system", "code", "valid", "display", "normalized", "why"), CASES)
def test_http_codesystem_validate_code(
    http: httpx.Client,
    system: str,
    code: str,
    valid: bool,
    display: str | None,
    normalized: str | None,
    why: str | None,
) -> None:
    response = http.get("/CodeSystem/$validate-code", params={"url": system, "code": code})
    assert response.status_code == 200, response.text
    body = response.json()
    assert values(body, "result") == [valid]
    assert values(body, "display") == ([display] if display else [])
    assert values(body, "normalized-code") == ([normalized] if normalized else [])
    if why is not None:
        assert why in values(body, "message")[0]


@pytest.mark.parametrize(
    ("url", "system", "code", "valid"),
    [
        (R4 + "mimetypes", BCP13, "application/pdf", True),
        (R4 + "all-languages", BCP47, "en-US", True),
        (R4 + "currencies", ISO4217, "EUR", True),
        (R4 + "jurisdiction", ISO3166, "US", True),
        (R4 + "all-languages", BCP47, "a" * 300, False),
    ],
)
def test_http_valueset_validate_code(
    http: httpx.Client, url: str, system: str, code: str, valid: bool
) -> None:
    response = http.get(
        "/ValueSet/$validate-code", params={"url": url, "system": system, "code": code}
    )
    assert response.status_code == 200, response.text
    assert values(response.json(), "result") == [valid]


def test_http_lookup(http: httpx.Client) -> None:
    body = http.get("/CodeSystem/$lookup", params={"system": BCP47, "code": "en-US"}).json()
    assert values(body, "display") == ["English (United States)"]


def test_http_lookup_of_a_bad_tag_is_not_found(http: httpx.Client) -> None:
    response = http.get("/CodeSystem/$lookup", params={"system": BCP47, "code": "en-USA"})
    assert_outcome(response, 404, "not-found", "extended language subtag 'usa'")


def test_http_expand_currencies(http: httpx.Client) -> None:
    body = http.get("/ValueSet/$expand", params={"url": R4 + "currencies"}).json()
    assert {"EUR", "USD"} <= {c["code"] for c in body["expansion"]["contains"]}


def test_http_expand_all_languages_is_too_costly(http: httpx.Client) -> None:
    response = http.get("/ValueSet/$expand", params={"url": R4 + "all-languages"})
    assert_outcome(response, 422, "too-costly", "grammar")


def test_http_subsumes(http: httpx.Client) -> None:
    body = http.get(
        "/CodeSystem/$subsumes", params={"system": ISO3166_2, "codeA": "GB-ENG", "codeB": "GB-LND"}
    ).json()
    assert values(body, "outcome") == ["subsumes"]
