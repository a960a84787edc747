"""The report in a real browser: headless Chromium opens the generated file from disk (and once from the
--serve server) and the tests assert on the rendered page: the run page's numbers, filters that change the
visible rows, an episode page with its steps and verdicts, the compare page's flipped tasks, and no console
error anywhere. Each test saves a screenshot (in the session's tmp dir).

Without Chromium the whole file is skipped with one reason; with CI=true that is a failure instead."""
from collections import Counter

import pytest

from browser_support import console_errors, in_ci, missing, start_browser, wait_for

REASON = missing()
if REASON is not None:
    if in_ci():
        pytest.fail(f"CI=true and the browser tests cannot run: {REASON}", pytrace=False)
    pytest.skip(f"browser tests: {REASON}", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

from ecab.view.payload import load_run  # noqa: E402
from ecab.view.server import start  # noqa: E402
from ecab.view.writer import write_report  # noqa: E402

# Every test here reads the session's `view_runs` (two whole runs): under pytest-xdist one worker builds them
# for all (`--dist loadgroup`, the Makefile's XDIST).
# A real browser (Chromium) on every test: the slow tier (make test-slow).
pytestmark = [pytest.mark.xdist_group("view_runs"), pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def screens(tmp_path_factory):
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def runs(view_runs):
    return {name: load_run(view_runs[name]) for name in ("heuristic", "random")}


@pytest.fixture(scope="module")
def reports(view_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    return {"single": write_report([view_runs["heuristic"]], out / "single.html"),
            "compare": write_report([view_runs["heuristic"], view_runs["random"]], out / "compare.html")}


def rows_of(run) -> list[dict]:
    return [dict(zip(run.main["columns"], row)) for row in run.main["rows"]]


def open_report(driver, url: str, page: str = "run") -> None:
    driver.get(url)
    wait_for(driver, "return document.body.dataset.ready === '1' && document.body.dataset.page === arguments[0]",
             30, page)


def go(driver, hash_: str, page: str, ready_selector: str) -> None:
    driver.execute_script("location.hash = arguments[0]", hash_)
    wait_for(driver, "return document.body.dataset.page === arguments[0] && document.querySelector(arguments[1])",
             30, page, ready_selector)


def count_text(driver) -> str:
    return driver.find_element(By.ID, "count").text


def visible_rows(driver) -> list[dict]:
    cells = driver.execute_script("""
        const keys = [...document.querySelectorAll('.vhead > div')].map((d) => d.dataset.key);
        return [...document.querySelectorAll('.vrow')].map((row) =>
            Object.fromEntries([...row.children].map((c, k) => [keys[k], c.textContent])));""")
    return sorted(cells, key=lambda c: int(c["i"]))


def test_run_page_shows_the_summary(browser, reports, runs, screens):
    open_report(browser, reports["single"].as_uri())
    summary = runs["heuristic"].summary
    cards = browser.find_element(By.ID, "cards").text
    assert f"{summary['overall_accuracy'] * 100:.1f}%" in cards and "95% CI" in cards
    titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#tables h3")]
    assert len(titles) == len(runs["heuristic"].main["tables"]) and any("by source" in t for t in titles)
    assert summary["task_audit"]["headline"] in browser.find_element(By.ID, "audit").text
    assert browser.execute_script("return [...document.images].every((i) => i.complete && i.naturalWidth > 0)")
    assert len(browser.find_elements(By.CSS_SELECTOR, ".plots img")) == len(runs["heuristic"].main["plots"])
    manifest = browser.find_element(By.CSS_SELECTOR, "table.manifest").text
    assert dict(runs["heuristic"].main["provenance"])["config hash"] in manifest
    browser.save_screenshot(str(screens / "run.png"))
    assert console_errors(browser) == []


def test_filters_and_sorting_change_the_visible_rows(browser, reports, runs, screens):
    rows = rows_of(runs["heuristic"])
    open_report(browser, reports["single"].as_uri())
    go(browser, "#/run/0/episodes", "list", ".vrow")
    assert count_text(browser) == f"{len(rows)} of {len(rows)} episodes"
    assert len(visible_rows(browser)) == len(rows)    # 16 rows fit the list; more would be drawn as scrolled

    Select(browser.find_element(By.ID, "f-outcome")).select_by_value("correct")
    correct = [r for r in rows if r["outcome"] == "correct"]
    assert 0 < len(correct) < len(rows)
    assert count_text(browser) == f"{len(correct)} of {len(rows)} episodes"
    assert [r["outcome"] for r in visible_rows(browser)] == ["correct"] * len(correct)
    browser.find_element(By.ID, "f-reset").click()
    wait_for(browser, "return document.getElementById('count').textContent.startsWith(arguments[0])", 10,
             f"{len(rows)} of")

    source = Counter(s for r in rows for s in r["failed_sources"]).most_common(1)[0][0]
    Select(browser.find_element(By.ID, "f-failed-sources")).select_by_value(source)
    expected = sorted(i for i, r in enumerate(rows) if source in r["failed_sources"])
    assert [int(r["i"]) for r in visible_rows(browser)] == expected
    browser.find_element(By.ID, "f-reset").click()

    task = rows[-1]["task"]
    wait_for(browser, "return document.getElementById('f-q')")
    browser.find_element(By.ID, "f-q").send_keys(task)
    assert {r["task"] for r in visible_rows(browser)} == {task}
    assert count_text(browser) == f"{sum(r['task'] == task for r in rows)} of {len(rows)} episodes"
    browser.find_element(By.ID, "f-reset").click()

    most = max(r["calls"] for r in rows)
    browser.find_element(By.ID, "f-min").send_keys(str(most))
    assert {int(r["calls"]) for r in visible_rows(browser)} == {most}
    browser.find_element(By.ID, "f-reset").click()

    header = browser.find_element(By.CSS_SELECTOR, ".vhead > div[data-key='calls']")
    header.click()
    header = browser.find_element(By.CSS_SELECTOR, ".vhead > div[data-key='calls']")
    header.click()                                          # second click: descending
    first = browser.find_element(By.CSS_SELECTOR, ".vrow[style*='top: 0px']")
    assert int(first.find_elements(By.TAG_NAME, "div")[7].text) == most
    browser.save_screenshot(str(screens / "episodes.png"))
    first.click()
    wait_for(browser, "return document.body.dataset.page === 'episode' && document.getElementById('timeline')")
    assert console_errors(browser) == []


def _interesting_episode(run) -> int:
    """A wrong episode that read the profile and had a clarification revealed (the heuristic does both)."""
    for i, (row, detail) in enumerate(zip(rows_of(run), run.details)):
        tools = {s.get("tool") for s in detail["steps"]}
        if row["outcome"] == "wrong" and "get_user_profile" in tools and any("reveal" in s for s in detail["steps"]):
            return i
    raise AssertionError("no wrong episode with a profile read and a reveal")


def test_episode_page_shows_steps_verdicts_and_products(browser, reports, runs, screens):
    run = runs["heuristic"]
    i = _interesting_episode(run)
    detail = run.details[i]
    open_report(browser, reports["single"].as_uri() + f"#/run/0/episode/{i}", "episode")
    wait_for(browser, "return document.getElementById('products')")
    steps = browser.find_elements(By.CSS_SELECTOR, "#timeline > li")
    assert len(steps) == len(detail["steps"])
    assert [s.get_attribute("data-call") for s in steps] == [str(s["call"]) for s in detail["steps"]]
    timeline = browser.find_element(By.ID, "timeline").text
    assert "profile read: carries" in timeline and "revealed cl_" in timeline
    row = rows_of(run)[i]
    assert run.main["tasks"][row["task"]]["query"] in browser.find_element(By.ID, "query").text
    verdict_rows = browser.find_elements(By.CSS_SELECTOR, "#verdicts tbody tr")
    assert len(verdict_rows) == len(detail["verdicts"])
    failed = [v for v in detail["verdicts"] if v.get("satisfied") is False]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#verdicts .badge.unsat")) == len(failed) > 0
    assert len(browser.find_elements(By.CSS_SELECTOR, "#verdicts tr.failed-rubric")) == len(failed)
    assert detail["recommended"] in browser.find_element(By.ID, "recommendation").text
    if not row["exact"]:
        assert browser.find_elements(By.CSS_SELECTOR, "#products tr.diff")
    failed_fields = {v["field"] for v in failed}
    shown_failed = {e.text for e in browser.find_elements(By.CSS_SELECTOR, "#products tr.failed td.k")}
    assert shown_failed == failed_fields & shown_failed and shown_failed
    button = browser.find_element(By.CSS_SELECTOR, "#timeline button.more")
    pre = button.find_element(By.XPATH, "preceding-sibling::pre")
    before = len(pre.text)
    button.click()
    assert len(pre.text) > before
    browser.save_screenshot(str(screens / "episode.png"))
    assert console_errors(browser) == []


def test_compare_page_shows_flipped_tasks(browser, reports, runs, screens):
    from ecab.view.compare import paired
    expected = paired(runs["heuristic"].episodes, runs["random"].episodes)
    open_report(browser, reports["compare"].as_uri() + "#/compare", "compare")
    flips = browser.find_elements(By.CSS_SELECTOR, "#flips tbody tr")
    assert len(flips) == len(expected["flips"]) > 0
    assert [f.find_element(By.TAG_NAME, "td").text for f in flips] == [f["task"] for f in expected["flips"]]
    deltas = browser.find_element(By.ID, "deltas").text
    assert "accuracy" in deltas and " pp [" in deltas
    for source in expected["by_source"]:
        assert f"satisfaction: {source}" in deltas
    assert len(browser.find_elements(By.CSS_SELECTOR, "#compare-tables table")) == 5
    browser.save_screenshot(str(screens / "compare.png"))
    link = flips[0].find_elements(By.TAG_NAME, "a")[-1]    # the other run's episode of the first flipped task
    link.click()
    wait_for(browser, "return document.body.dataset.page === 'episode' && document.getElementById('timeline')")
    assert expected["flips"][0]["task"] in browser.find_element(By.TAG_NAME, "h1").text
    assert console_errors(browser) == []


def test_served_report_loads_without_errors(browser, reports):
    server, url = start(reports["compare"])
    try:
        open_report(browser, url)
        go(browser, "#/run/1/episodes", "list", ".vrow")
        assert browser.find_element(By.ID, "run-pick").get_attribute("value") == "1"
        assert console_errors(browser) == []
    finally:
        server.shutdown()
        server.server_close()


def test_episode_page_puts_the_verdict_and_failed_rubrics_first(browser, reports, runs, screens):
    """Issue 29: the failed rubrics sat ~6,700 px down, under the whole transcript. Now the verdict and the
    failed rubrics come first, each with a jump to the step that consulted its source, and the product
    comparison prints nested values as text."""
    run = runs["heuristic"]
    i = _interesting_episode(run)
    detail = run.details[i]
    open_report(browser, reports["single"].as_uri() + f"#/run/0/episode/{i}", "episode")
    wait_for(browser, "return document.getElementById('products')")
    tops = browser.execute_script("""
        const top = (id) => document.getElementById(id).getBoundingClientRect().top + window.scrollY;
        return {verdict: top('verdict'), failed: top('failed-rubrics'), timeline: top('timeline')};""")
    assert tops["verdict"] < tops["failed"] < tops["timeline"]
    assert tops["failed"] < browser.execute_script("return window.innerHeight")   # on the first screen
    failed = [v for v in detail["verdicts"] if v.get("satisfied") is False]
    rows = browser.find_elements(By.CSS_SELECTOR, "#failed-rubrics tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == [v["id"] for v in failed]
    jumps = browser.find_elements(By.CSS_SELECTOR, "#failed-rubrics a.jump")
    consulted = [v for v in failed if v["learn"]["turn"] is not None]
    assert len(jumps) == len(consulted) and \
        len(browser.find_elements(By.CSS_SELECTOR, "#failed-rubrics .never")) == len(failed) - len(consulted)
    if jumps:
        jumps[0].click()
        target = browser.find_element(By.ID, f"turn-{jumps[0].get_attribute('data-turn')}")
        wait_for(browser, "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= "
                          "window.innerHeight + r.height", 10, target)
        assert browser.execute_script("return location.hash") == f"#/run/0/episode/{i}"   # still this page
    assert "[object Object]" not in browser.find_element(By.ID, "products").text
    ranks = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#products tr") if "Best Sellers Rank" in r.text]
    assert all(": " in text.split("Best Sellers Rank", 1)[1] for text in ranks)
    browser.save_screenshot(str(screens / "episode-top.png"))
    assert console_errors(browser) == []


def test_a_live_page_shows_its_progress(browser, view_runs, tmp_path):
    """A run in progress served live: the run page says how far it has got, and follows the run (it polls
    status.json and reloads when the server rendered a newer version)."""
    from ecab.runs import RunFolder
    from ecab.view.server import start_live
    from run_copies import WRITER, in_progress
    folder, trajectories = in_progress(view_runs["heuristic"], tmp_path / "running", 4)
    server, url = start_live(folder)
    try:
        open_report(browser, url)
        assert browser.find_element(By.ID, "run-status").text.startswith(
            f"in progress: 4 of {len(trajectories)} episodes")
        assert f"in progress: 4 of {len(trajectories)}" in browser.find_element(By.ID, "status").text
        RunFolder(folder).append_trajectory(WRITER, trajectories[4])      # the runner records one more:
        wait_for(browser, "const s = document.getElementById('run-status'); "          # the page reloads itself
                          "return s && s.textContent.startsWith(arguments[0])", 30,
                 f"in progress: 5 of {len(trajectories)} episodes")
        assert console_errors(browser) == []
    finally:
        server.shutdown()
        server.server_close()
