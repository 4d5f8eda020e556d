"""The explorer in a real browser: headless Chromium from Debian's packages, driven by Selenium from PyPI.

The driver is pointed at /usr/bin/chromium and /usr/bin/chromedriver (``SE_OFFLINE``: Selenium never
downloads a browser); ``scripts/setup_env.sh`` installs both. The page is opened from ``file://``, as a
reader opens it from the results folder. Screenshots go to ``$SALTBENCH_EXPLORER_SHOTS`` when it is set.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from saltbench.explorer import orientation
from saltbench.io import read_table

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
STATUS_RGB = {
    "correct": (0, 158, 115),
    "incorrect": (213, 94, 0),
    "redundant": (204, 121, 167),
    "selective": (230, 159, 0),
}
"""The page's status colours (explorer.css)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra)")
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(
            "Chromium is not installed (apt-get install chromium chromium-driver; scripts/setup_env.sh)"
        )
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # never let Selenium Manager fetch a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1500,1000",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    yield driver
    driver.quit()


def _open(driver, explorer, fragment: str = "") -> None:
    """Load the page afresh at ``fragment`` (a new document: a changed hash alone would not reload it)."""
    driver.get("about:blank")
    driver.get((explorer.path / "index.html").as_uri() + fragment)
    _wait(
        driver,
        "return document.querySelectorAll('#responses tr.response').length > 0 || "
        "document.querySelector('#lists-view li') !== null",
    )


def _wait(driver, condition: str, timeout: float = 120.0) -> None:
    """Poll ``condition`` until it holds (the timeout only stops a hung page; a loaded machine is slow)."""
    end = time.monotonic() + timeout
    while not driver.execute_script(condition):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for: {condition}")
        time.sleep(0.05)


def _shot(driver, name: str) -> None:
    folder = os.environ.get("SALTBENCH_EXPLORER_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))


def _errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def _rgba(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in re.findall(r"[\d.]+", text))


def test_every_view_loads_without_console_errors(browser, explorer, sim_run) -> None:
    _open(browser, explorer)
    _shot(browser, "01-list")
    cell = sim_run.cells[-1]
    sample = read_table(cell.generations, "generations")["sample_id"][0]
    _open(browser, explorer, f"#m={cell.model}&t={cell.task}&s={cell.style}&r={sample}&g=line")
    _wait(browser, "return document.querySelector('#answer, #raw-response') !== null")
    _open(browser, explorer, "#v=lists&g=atom&c=topk.max_entropy")
    assert browser.find_element("id", "lists-view").is_displayed()
    assert not browser.find_element("id", "responses-view").is_displayed()
    _shot(browser, "02-lists")
    assert _errors(browser) == []


@pytest.mark.parametrize("cell_index", [1, 6])
def test_units_and_their_colours_match_the_units_table(browser, explorer, sim_run, cell_index) -> None:
    """Two responses of two cells: every unit of the answer, its status, its colour and its shade."""
    cell = sim_run.cells[cell_index]
    column = "topk.mean_probability"
    units = read_table(cell.units, "units").filter(pl.col("granularity") == "atom")
    scored = units.filter((pl.col("status") != "missing") & pl.col(column).is_finite())
    # the page's shade: average-rank percentile of the oriented confidence within the cell
    oriented = pl.col(column) * orientation(column)
    ranks = scored.with_columns(pct=(oriented.rank("average") - 1) / (pl.len() - 1))
    generations = read_table(cell.generations, "generations")
    answered = units.filter(pl.col("answer_status") == "answered")["sample_id"].unique(maintain_order=True)
    for sample in answered.head(2).to_list():
        _open(browser, explorer, f"#m={cell.model}&t={cell.task}&s={cell.style}&g=atom&c={column}&r={sample}")
        _wait(browser, f"return document.querySelector('#response-title')?.textContent === '{sample}'")
        shown = browser.execute_script(
            "return [...document.querySelectorAll('#answer .unit')].map(e => [e.dataset.i, e.dataset.status, "
            "e.textContent, getComputedStyle(e).backgroundColor]);"
        )
        expected = units.filter(pl.col("sample_id") == sample).sort("unit_index")
        text = generations.filter(pl.col("sample_id") == sample)["text"][0]
        written = expected.filter(pl.col("status") != "missing")
        pct = dict(ranks.filter(pl.col("sample_id") == sample).select("unit_index", "pct").iter_rows())
        page = {int(i): (status, content, colour) for i, status, content, colour in shown}
        assert sorted(page) == expected["unit_index"].to_list()
        for row in written.iter_rows(named=True):
            status, content, colour = page[row["unit_index"]]
            assert status == row["status"]
            assert content == text[row["span_start"] : row["span_end"]]
            rgba = _rgba(colour)
            assert rgba[:3] == STATUS_RGB[row["status"]]
            assert rgba[3] == pytest.approx(0.12 + 0.78 * pct[row["unit_index"]], abs=0.01)
        for row in expected.filter(pl.col("status") == "missing").iter_rows(named=True):
            assert page[row["unit_index"]][0] == "missing"
    _shot(browser, f"03-response-{cell_index}")


def _precision(units: pl.DataFrame) -> pl.DataFrame:
    """Per response: C / (R + I), I = missing units followed by a unit the model wrote (docs/metrics.md)."""
    written = (pl.col("status") != "missing").cast(pl.Int32)
    later = written.reverse().cum_sum().reverse().over("sample_id") - written
    flagged = units.sort("sample_id", "unit_index").with_columns(internal=(written == 0) & (later > 0))
    return flagged.group_by("sample_id").agg(
        precision=(pl.col("status") == "correct").sum()
        / (written.sum() + pl.col("internal").sum()).clip(lower_bound=1)
    )


def _set(driver, element_id: str, value: str) -> None:
    """Type ``value`` into an input the way a reader does (an ``input`` event follows)."""
    driver.execute_script(
        "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
        "e.dispatchEvent(new Event('input'));",
        element_id,
        value,
    )


def _count(driver) -> int:
    return int(driver.find_element("id", "count").text.split(" of ")[0])


def test_filters_and_sorting_return_what_the_tables_say(browser, explorer, sim_run) -> None:
    from selenium.webdriver.support.ui import Select

    cell = sim_run.cells[5]  # sim-planted-reason: some responses cut off by the budget
    units = read_table(cell.units, "units")
    statuses = units.group_by("sample_id").agg(pl.col("answer_status").first().cast(pl.String))
    _open(browser, explorer, f"#m={cell.model}&t={cell.task}&s={cell.style}&g=atom")
    assert _count(browser) == statuses.height
    for status, n in statuses.group_by("answer_status").len().iter_rows():
        Select(browser.find_element("id", "filter-status")).select_by_value(status)
        assert _count(browser) == n, status
        assert {
            e.get_attribute("data-status") for e in browser.find_elements("css selector", "tr.response")
        } == {status}
    Select(browser.find_element("id", "filter-status")).select_by_value("")
    precision = _precision(units.filter(pl.col("granularity") == "atom"))
    for bound in ("0.5", "0.8"):
        _set(browser, "filter-pmin", bound)
        assert _count(browser) == precision.filter(pl.col("precision") >= float(bound)).height, bound
    _set(browser, "filter-pmin", "")
    _set(browser, "filter-pmax", "0.5")
    assert _count(browser) == precision.filter(pl.col("precision") <= 0.5).height
    _set(browser, "filter-pmax", "")
    browser.find_element("css selector", "th[data-key=precision]").click()
    cells = browser.find_elements("css selector", "tr.response td:nth-child(4)")
    shown = [float(e.text) for e in cells if e.text != "—"]
    assert len(cells) == statuses.height and len(shown) == precision.height
    assert shown == sorted(shown)


def test_the_run_lists_open_their_unit(browser, explorer, sim_run) -> None:
    column = "topk.mean_probability"
    _open(browser, explorer, f"#v=lists&g=atom&c={column}")
    entries = browser.find_elements("css selector", "#lists-view li.list-entry")
    assert 0 < len(entries) <= 20
    units = pl.concat([read_table(c.units, "units") for c in sim_run.cells], how="vertical_relaxed")
    top = (
        units.filter((pl.col("granularity") == "atom") & ~pl.col("status").is_in(["correct", "missing"]))
        .sort(column, descending=True)
        .row(0, named=True)
    )
    first = entries[0]
    assert (first.get_attribute("data-sample"), int(first.get_attribute("data-i"))) == (
        top["sample_id"],
        top["unit_index"],
    )
    first.find_element("tag name", "a").click()
    _wait(browser, "return document.querySelector('#answer .unit.focus') !== null")
    focus = browser.find_element("css selector", "#answer .unit.focus")
    assert int(focus.get_attribute("data-i")) == top["unit_index"]
    assert focus.get_attribute("data-status") == top["status"]


def test_hover_shows_the_units_tokens_and_interventions_mark_corrupted_atoms(
    browser, explorer, sim_run
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    rows = read_table(sim_run.interventions[0], "interventions")
    sample = rows.filter(pl.col("n_corrupted") > 0)["sample_id"][0]
    model, task = rows["model"][0], rows["task"][0]
    _open(browser, explorer, f"#m={model}&t={task}&s=direct&g=atom&r={sample}")
    _wait(browser, "return document.querySelectorAll('tr.intervention').length > 0")
    assert (
        len(browser.find_elements("css selector", "tr.intervention"))
        == rows.filter(pl.col("sample_id") == sample).height
    )
    marks = [m.text for m in browser.find_elements("css selector", "mark.corrupt")]
    wanted = rows.filter(pl.col("sample_id") == sample)["corrupted_atoms"].explode().drop_nulls().to_list()
    assert sorted(marks) == sorted(wanted)
    unit = browser.find_element("css selector", "#answer .unit:not(.st-missing)")
    ActionChains(browser).move_to_element(unit).perform()
    _wait(browser, "return !document.getElementById('tip').hidden")
    tip = browser.find_element("id", "tip").text
    assert unit.get_attribute("data-status") in tip and "alternatives" in tip
    assert len(browser.find_elements("css selector", "#tip tr")) >= 2  # header and at least one token
    _shot(browser, "04-hover-interventions")
    assert _errors(browser) == []


def test_absent_and_infinite_values_are_shown_as_a_dash_and_minus_infinity(browser, explorer) -> None:
    """The data files' null (absent: an import without log-probabilities) and "-inf" (docs/explorer.md §2)."""
    _open(browser, explorer)
    shown = browser.execute_script('return [fmt(null), fmt("-inf", 2), fmt(-0.12345), fmt(-2.5, 2)];')
    assert shown == ["—", "−∞", "-0.123", "-2.50"]
