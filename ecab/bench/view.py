"""`python -m ecab.bench.view runs/<name> [runs/<other> ...]`: the report's size and how fast it opens.

A benchmark, not a test. It reads the runs once, writes their report twice (data gzip+base64, and plain
JSON), and opens each in headless Chromium (bench/browser.py) `--repeat` times from disk, printing:
- size of the file, and seconds to build it;
- first render: ms from navigation start (reading and parsing the file included) until the first page is
  drawn, and of that, when the main data was decoded;
- list: ms to draw the episode list (every row filtered and sorted, the visible ones drawn);
- episode: ms to open an episode in the middle (its chunk inflated and parsed, the page drawn), and (next)
  the one after it, whose chunk is already decoded;
- the JS heap after those.
--copies N repeats a single run's episodes N times (a 10,000-episode report from a 2,000-episode run).
With --screenshots DIR it saves report-run.png, report-episode.png (its top), report-episode-verdicts.png
(its rubrics and products) and (2+ runs) report-compare.png there.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from ecab.bench.browser import console_errors, start_browser, wait_for
from ecab.view.payload import LoadedRun, load_run
from ecab.view.writer import render

def page_ms(driver, hash_: str) -> float:
    """Navigate within the report; the page's own measure of how long drawing it took (ms)."""
    driver.execute_script("window.ecabTiming.lastPage = null; location.hash = arguments[0]", hash_)
    return wait_for(driver, "return window.ecabTiming.lastPage", 120)["ms"]


def open_times(driver, path: Path, episodes: int) -> dict[str, float]:
    driver.get(path.as_uri())
    wait_for(driver, "return document.body.dataset.ready === '1'", 120)
    timing = driver.execute_script("return window.ecabTiming")
    listed = page_ms(driver, "#/run/0/episodes")
    opened = page_ms(driver, f"#/run/0/episode/{episodes // 2}")
    again = page_ms(driver, f"#/run/0/episode/{episodes // 2 + 1}")
    heap = driver.execute_script("return performance.memory ? performance.memory.usedJSHeapSize : 0")
    errors = console_errors(driver)
    if errors:
        raise RuntimeError(f"{path.name}: console errors: {errors[:3]}")
    return {"first_render_ms": timing["firstRender"], "decoded_ms": timing["decoded"], "list_ms": listed,
            "episode_ms": opened, "next_ms": again, "heap_mb": heap / 2**20}


def interesting_episode(run: LoadedRun) -> int:
    """The episode a screenshot should show: a wrong one that failed a clarification rubric whose slot was
    never revealed, with a profile read and a reveal (else the best match of those, else the first)."""
    def score(i: int) -> int:
        steps, verdicts = run.details[i]["steps"], run.details[i]["verdicts"]
        missed = any(v.get("satisfied") is False and v["learn"].get("where") == "clarification"
                     and v["learn"].get("call") is None for v in verdicts)
        read = any(s.get("tool") == "get_user_profile" for s in steps)
        return 4 * missed + 2 * read + any("reveal" in s for s in steps)
    rows = [dict(zip(run.main["columns"], r)) for r in run.main["rows"]]
    wrong = [i for i, r in enumerate(rows) if r["outcome"] == "wrong"]
    return max(wrong, key=score) if wrong else 0


def screenshots(driver, path: Path, runs: list[LoadedRun], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    episode = f"#/run/0/episode/{interesting_episode(runs[0])}"
    shots = [("report-run.png", "#/run/0", "#cards", None), ("report-episode.png", episode, "#products", None),
             ("report-episode-verdicts.png", episode, "#products", "#verdicts")]
    if len(runs) > 1:
        shots.append(("report-compare.png", "#/compare", "#flips", None))
    saved = []
    for name, hash_, selector, anchor in shots:
        driver.get("about:blank")   # a fresh load, not a hash change within the page
        driver.get(path.as_uri() + hash_)
        wait_for(driver, "return document.body.dataset.ready === '1' && document.querySelector(arguments[0])", 120,
                 selector)
        if anchor:
            driver.execute_script("document.querySelector(arguments[0]).scrollIntoView()", anchor)
            driver.execute_script("window.scrollBy(0, -70)")
        time.sleep(0.3)
        driver.save_screenshot(str(out / name))
        saved.append(out / name)
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ecab.bench.view", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", type=Path, nargs="+")
    parser.add_argument("--repeat", type=int, default=3, help="loads per encoding (median printed)")
    parser.add_argument("--screenshots", type=Path, help="save the report's pages as PNGs in this folder")
    parser.add_argument("--copies", type=int, default=1,
                        help="repeat the (single) run's episodes this many times: a bigger run without running it")
    args = parser.parse_args(argv)
    if args.copies > 1 and len(args.run_dirs) > 1:
        parser.error("--copies takes one run")
    started = time.perf_counter()
    runs = [load_run(d) for d in args.run_dirs]
    if args.copies > 1:
        runs[0].main["rows"] = runs[0].main["rows"] * args.copies
        runs[0].details = runs[0].details * args.copies
    episodes = len(runs[0].details)
    print(f"read {len(runs)} run(s), {sum(len(r.details) for r in runs)} episodes, in "
          f"{time.perf_counter() - started:.1f} s")
    driver = start_browser()
    try:
        with tempfile.TemporaryDirectory(prefix="ecab-bench-view-") as tmp:
            rows = []
            for compress in (True, False):
                path = Path(tmp) / f"report-{'gzip' if compress else 'json'}.html"
                t0 = time.perf_counter()
                path.write_text(render(runs, compress=compress), encoding="utf-8")
                built = time.perf_counter() - t0
                loads = [open_times(driver, path, episodes) for _ in range(args.repeat)]
                median = {k: statistics.median(x[k] for x in loads) for k in loads[0]}
                rows.append((path.name, path.stat().st_size / 2**20, built, median))
                if compress and args.screenshots:
                    for shot in screenshots(driver, path, runs, args.screenshots):
                        print(f"saved {shot}")
    finally:
        driver.quit()
    print(f"\n{'report':<18}{'MiB':>8}{'build s':>9}{'first render ms':>17}{'(decoded)':>11}{'list ms':>9}"
          f"{'episode ms':>12}{'(next)':>8}{'heap MiB':>10}")
    for name, size, built, m in rows:
        print(f"{name:<18}{size:>8.1f}{built:>9.1f}{m['first_render_ms']:>17.0f}{m['decoded_ms']:>11.0f}"
              f"{m['list_ms']:>9.0f}{m['episode_ms']:>12.0f}{m['next_ms']:>8.0f}{m['heap_mb']:>10.0f}")
    print(f"(median of {args.repeat} loads from disk in headless Chromium; {episodes} episodes in the first run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
