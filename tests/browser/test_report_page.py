"""The HTML report in a real browser: Debian's Chromium (headless, through Playwright) opens
the page ``report.to_html`` wrote, offline, and the test checks what it shows (the summary,
the chart's bars, the by-code table with its suggestion) in the light and the dark colour
scheme, and that the page asked for nothing but itself. Chromium missing is a failure."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import Browser, Route, sync_playwright

from workbench import Workbench

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
CHROMIUM = Path(os.environ.get("CHROMIUM") or "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
#: the page's background and text colours in each scheme (its CSS variables)
SCHEMES = {
    "light": ("rgb(255, 255, 255)", "rgb(31, 35, 40)"),
    "dark": ("rgb(13, 17, 23)", "rgb(230, 237, 243)"),
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (or set $CHROMIUM)")
    with sync_playwright() as playwright:
        found = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield found
        found.close()


@pytest.fixture(scope="module")
def page_file(default_wb: Workbench, tmp_path_factory: pytest.TempPathFactory) -> Path:
    codes = pd.Series(["male", "female", "female", " male", "bogus", None], dtype=object)
    report = default_wb.validate_column(codes, GENDER)
    return report.to_html(tmp_path_factory.mktemp("report") / "report.html", title="Gender")


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_the_page_shows_the_report_in_both_schemes(
    browser: Browser, page_file: Path, scheme: str
) -> None:
    context = browser.new_context(color_scheme=scheme)  # type: ignore[arg-type]
    asked: list[str] = []

    def record(route: Route) -> None:
        asked.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    context.route("**/*", record)
    page = context.new_page()
    page.goto(page_file.as_uri())
    assert asked == [page_file.as_uri()]  # nothing but the page itself
    assert page.title() == "Gender"
    assert page.locator("#summary").inner_text() == "3 of 6 rows valid (50.00%)"
    bars = page.locator("#chart svg rect.bar")
    assert bars.count() == 3 + 2  # valid, unknown-code, missing; ' male' and 'bogus'
    assert page.locator("#chart svg").bounding_box()["width"] > 500  # type: ignore[index]
    row = page.locator("#by-code tr", has_text="␣male")
    headers = page.locator("#by-code th").all_inner_texts()
    column = headers.index("suggestion") - (len(headers) - row.locator("td").count())
    assert "male" in row.locator("td").nth(column).inner_text()  # the suggestion column
    assert "did you mean 'male'" in row.inner_text()
    background, text = SCHEMES[scheme]
    body = page.locator("body")
    assert body.evaluate("e => getComputedStyle(e).backgroundColor") == background
    assert body.evaluate("e => getComputedStyle(e).color") == text
    label = page.locator("#chart svg text").first
    assert label.evaluate("e => getComputedStyle(e).fill") == text  # the chart follows too
    context.close()
