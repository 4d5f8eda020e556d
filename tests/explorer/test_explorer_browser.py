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


def _wait(driver, condition: str, *args: object, timeout: float = 120.0) -> None:
    """Poll ``condition`` (called with ``args``) until it holds (the timeout only stops a hung page; a
    loaded machine is slow)."""
    end = time.monotonic() + timeout
    while not driver.execute_script(condition, *args):
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


def _entries(driver) -> list[tuple[int, str, int, str]]:
    """The lists' entries: chunk, sample, unit index and status ("confident and wrong" first)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#lists-view li.list-entry')].map(e => "
        "[Number(e.dataset.chunk), e.dataset.sample, Number(e.dataset.i), e.dataset.status]);"
    )


def _most_confident_wrong(units: pl.DataFrame, column: str, statuses: list[str]) -> tuple[str, int]:
    """(sample, unit) of the unit of ``statuses`` with the highest oriented confidence at atom level."""
    scored = units.filter(
        (pl.col("granularity") == "atom") & pl.col("status").is_in(statuses) & pl.col(column).is_finite()
    )
    top = scored.sort(pl.col(column) * orientation(column), descending=True).row(0, named=True)
    return top["sample_id"], top["unit_index"]


def _click(driver, selector: str) -> None:
    driver.execute_script("document.querySelector(arguments[0]).click();", selector)


def test_the_lists_follow_the_pickers_and_the_filters_and_open_their_unit(browser, explorer, sim_run) -> None:
    """One cell, then every model on its task; unit and response status filters; a lower-is-confident
    function ranked by its oriented value and labelled so."""
    from selenium.webdriver.support.ui import Select

    column = "topk.max_entropy"
    cell = sim_run.cells[5]  # sim-planted-reason, direct, dna: excluded (answered 0.875 < 0.9)
    units = read_table(cell.units, "units")
    _open(browser, explorer, f"#v=lists&m={cell.model}&t={cell.task}&s={cell.style}&g=atom&c={column}")
    entries = _entries(browser)
    assert 0 < len(entries) <= 20 and {e[0] for e in entries} == {5}
    assert "lower = more confident" in browser.find_element("id", "lists-scope").text
    wrong = ["incorrect", "redundant", "selective"]
    assert tuple(entries[0][1:3]) == _most_confident_wrong(units, column, wrong)
    _click(browser, ".list-status[value=redundant]")
    _click(browser, ".list-status[value=selective]")
    _wait(
        browser,
        "return [...document.querySelectorAll('li.list-entry')].every(e => e.dataset.status === "
        "'incorrect' || e.dataset.status === 'correct')",
    )
    assert tuple(_entries(browser)[0][1:3]) == _most_confident_wrong(units, column, ["incorrect"])
    Select(browser.find_element("id", "list-scope")).select_by_value("task")
    _wait(browser, "return location.hash.includes('sc=task')")
    # eligible models only: sim-planted alone (chunk 1: direct, dna)
    _wait(
        browser, "return [...document.querySelectorAll('li.list-entry')].every(e => e.dataset.chunk === '1')"
    )
    _click(browser, "#list-eligible")
    both = pl.concat([read_table(sim_run.cells[i].units, "units") for i in (1, 5)], how="vertical_relaxed")
    top = _most_confident_wrong(both, column, ["incorrect"])
    _wait(browser, f"return document.querySelector('li.list-entry').dataset.sample === '{top[0]}'")
    assert {e[0] for e in _entries(browser)} <= {1, 5}
    Select(browser.find_element("id", "list-response-status")).select_by_value("truncated")
    truncated = set(both.filter(pl.col("answer_status") == "truncated")["sample_id"].to_list())
    _wait(
        browser,
        "return document.querySelectorAll('li.list-entry').length > 0 && [...document."
        "querySelectorAll('li.list-entry')].every(e => arguments[0].includes(e.dataset.sample))",
        sorted(truncated),
    )
    first = browser.find_element("css selector", "#lists-view li.list-entry")
    sample, index = first.get_attribute("data-sample"), int(first.get_attribute("data-i"))
    assert sample in truncated
    first.find_element("tag name", "a").click()
    _wait(browser, "return document.querySelector('#answer .unit.focus') !== null")
    focus = browser.find_element("css selector", "#answer .unit.focus")
    assert int(focus.get_attribute("data-i")) == index
    _shot(browser, "05-lists-truncated")


def test_the_page_opens_on_an_eligible_model_and_summarises_the_cell(browser, explorer, sim_run) -> None:
    """No hash: the eligible model with the highest answered share; the excluded one is marked in the picker;
    a cell's header holds the metrics stage's precision and AUROC, its units and the alignment."""
    _open(browser, explorer)
    assert browser.execute_script("return [state.m, state.s, state.t];") == [
        "sim-planted",
        "direct",
        "matmul",
    ]
    labels = [o.text for o in browser.find_elements("css selector", "#model option")]
    assert labels == ["sim-planted", "sim-planted-reason — excluded: answered 0.875 (direct)"]
    option = browser.find_element("css selector", "#function option[value=max_entropy]").text
    assert option == "max_entropy (lower = more confident)"
    cell = sim_run.cells[4]  # sim-planted-reason, direct, matmul
    column = "topk.max_entropy"
    _open(browser, explorer, f"#m={cell.model}&t={cell.task}&s={cell.style}&g=line&c={column}")
    _wait(browser, "return document.getElementById('summary-precision') !== null")
    metrics = read_table(cell.metrics, "metrics").filter(pl.col("granularity") == "line")
    precision = metrics.filter(pl.col("metric") == "precision").row(0, named=True)
    auroc = metrics.filter(
        (pl.col("metric") == "auroc_pooled") & (pl.col("confidence") == "max_entropy")
    ).row(0, named=True)
    text = browser.find_element("id", "cell-summary").text
    header = browser.find_element("css selector", "th[data-key=confidence]")
    assert header.text.startswith("mean conf. ↓")
    assert "lower = more confident" in header.get_attribute("title")
    assert (
        f"precision {precision['value']:.3f} [{precision['ci_low']:.3f}, {precision['ci_high']:.3f}]" in text
    )
    assert f"AUROC of {column} {auroc['value']:.3f}" in text
    assert "excluded from every estimate: answered 0.875 < 0.90" in text and "strict alignment" in text
    units = read_table(cell.units, "units").filter(pl.col("granularity") == "line")
    written = units.filter(pl.col("status") != "missing").height
    assert f"{written} units answered, {units.height - written} missing" in text
    _shot(browser, "06-summary")


def test_an_unanswered_response_counts_its_reference_units_as_missing(browser, imported_explorer) -> None:
    """The imported cell's response 4 opened a fence and wrote nothing: 0 units, 3 missing, not 0 and 0."""
    built, dataset = imported_explorer
    sample = dataset["sample_id"][4]
    missing = len(dataset["reference"][4].split())
    _open(browser, built, f"#g=atom&r={sample}")
    _wait(browser, f"return document.querySelector('#response-title')?.textContent === '{sample}'")
    row = browser.find_element("css selector", f"tr.response[data-sample='{sample}']")
    assert [td.text for td in row.find_elements("tag name", "td")][-3:] == ["0", "0", str(missing)]
    assert browser.find_element("id", "response-units").text.startswith(
        f"0 units answered (0 not correct), {missing} missing of the reference's {missing}"
    )


def test_at_1000_pixels_nothing_scrolls_sideways(browser, explorer, sim_run) -> None:
    cell = sim_run.cells[5]
    sample = read_table(cell.generations, "generations")["sample_id"][0]
    browser.set_window_size(1000, 900)
    try:
        for view in ("responses", "lists"):
            _open(browser, explorer, f"#m={cell.model}&t={cell.task}&s={cell.style}&r={sample}&v={view}")
            _wait(browser, "return document.getElementById('summary-units') !== null")
            widths = browser.execute_script(
                "const p = document.getElementById('list-pane'), d = document.documentElement;"
                "return [p.scrollWidth, p.clientWidth, d.scrollWidth, d.clientWidth];"
            )
            assert widths[0] <= widths[1] and widths[2] <= widths[3], (view, widths)
            _shot(browser, f"07-narrow-{view}")
    finally:
        browser.set_window_size(1500, 1000)


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
    # every estimator of the unit, oriented and grouped by family (docs/explorer.md §1)
    family = browser.find_element("css selector", "#tip .estimators .family[data-family='single_pass']").text
    assert "every estimator, oriented" in tip and family.startswith("single pass:")
    shown = dict(part.rsplit(" ", 1) for part in family.removeprefix("single pass: ").split(" · "))
    assert "topk.mean_probability" in shown and "topk.max_entropy" in shown
    k = int(unit.get_attribute("data-k"))
    value = browser.execute_script(
        "const u = unitsOf(current.data, state.g); return u.c['topk.max_entropy'][arguments[0]];", k
    )
    assert float(shown["topk.max_entropy"]) == pytest.approx(-value, abs=1e-3)  # lower = confident: negated
    _shot(browser, "04-hover-interventions")
    assert _errors(browser) == []


def test_absent_and_infinite_values_are_shown_as_a_dash_and_minus_infinity(browser, explorer) -> None:
    """The data files' null (absent: an import without log-probabilities) and "-inf" (docs/explorer.md §2)."""
    _open(browser, explorer)
    shown = browser.execute_script('return [fmt(null), fmt("-inf", 2), fmt(-0.12345), fmt(-2.5, 2)];')
    assert shown == ["—", "−∞", "-0.123", "-2.50"]


def test_every_family_of_a_unit_is_in_its_hover_and_its_estimators_can_be_picked(
    browser, sim_run, explorer_options, tmp_path
) -> None:
    """A cell whose units carry a draws and a second-pass column (added by hand here; the scoring stage adds
    them in a run): the hover box lists them under their families, oriented, and picking the draws'
    function shows its own source's column (docs/explorer.md §1)."""
    import dataclasses

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select

    from saltbench.explorer import build_explorer
    from saltbench.io import provenance, write_table

    cell = sim_run.cells[0]
    units = read_table(cell.units, "units")
    units = units.with_columns(
        pl.lit(0.75).alias("draws.agreement"),
        pl.lit(3.0).alias("draws.distinct"),
        pl.lit(0.6).alias("second_pass.verbalized"),
    )
    path = tmp_path / "units.parquet"
    write_table(units, path, provenance(stage="scoring"), "units")
    summary = build_explorer(
        tmp_path / "explorer",
        [dataclasses.replace(cell, units=path)],
        sim_run.datasets,
        [],
        options=explorer_options,
    )
    _open(browser, summary, f"#m={cell.model}&t={cell.task}&s={cell.style}&g=atom")
    _wait(
        browser,
        "return document.querySelectorAll('#answer .unit:not(.st-missing)').length > 0 || "
        "document.querySelector('#responses tr.response') !== null",
    )
    browser.find_element("css selector", "#responses tr.response").click()
    _wait(browser, "return document.querySelectorAll('#answer .unit:not(.st-missing)').length > 0")
    unit = browser.find_element("css selector", "#answer .unit:not(.st-missing)")
    ActionChains(browser).move_to_element(unit).perform()
    _wait(browser, "return !document.getElementById('tip').hidden")
    lines = {
        node.get_attribute("data-family"): node.text
        for node in browser.find_elements("css selector", "#tip .estimators .family")
    }
    assert list(lines) == ["single_pass", "samples", "second_pass"]
    assert lines["samples"] == "samples: draws.agreement 0.750 · draws.distinct -3.000"  # lower = confident
    assert lines["second_pass"] == "second pass: second_pass.verbalized 0.600"
    Select(browser.find_element("id", "function")).select_by_value("agreement")
    _wait(browser, "return location.hash.includes('c=draws.agreement')")
    assert "agreement · samples" in browser.find_element("id", "function").text
    assert _errors(browser) == []
