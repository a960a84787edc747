"""Write the report: one self-contained HTML file (the page's HTML, CSS and JS from assets/, the data embedded).

The data goes into inert `<script type="application/x-ecab">` elements the page decodes itself:
- `ecab-main`: every run's page data and episode rows, plus the compare data; decoded at load.
- one element per chunk of about CHUNK_BYTES of episode details per run; decoded when an episode of that
  chunk is opened, so a 10k-episode run opens as fast as its list renders.
Each is gzip then base64 (the browser's DecompressionStream inflates it) or, with compress=False, the JSON
itself; docs/decisions.md#report-size has the measured sizes and load times of both.
"""
from __future__ import annotations

import base64
import gzip
import html
import time
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from ecab.view.payload import LoadedRun, embedded_plots, load_run, to_json

CHUNK_BYTES = 512 * 1024      # raw JSON per detail chunk: a few ms to inflate and parse in the browser
REPORT_NAME = "report.html"
FORMAT = 1


def asset(name: str) -> str:
    return resources.files("ecab.view").joinpath("assets", name).read_text(encoding="utf-8")


def encode(text: str, compress: bool) -> tuple[str, str]:
    """(encoding name, element body) for a JSON text."""
    if not compress:
        return "json", text
    packed = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    return "gzip64", base64.b64encode(packed).decode("ascii")


def chunks(details: Sequence[dict[str, Any]], limit: int = CHUNK_BYTES) -> Iterable[tuple[int, list[str]]]:
    """(first episode index, [detail JSON, ...]) groups of consecutive episodes of about `limit` bytes."""
    start, group, size = 0, [], 0
    for index, detail in enumerate(details):
        text = to_json(detail)
        if group and size + len(text) > limit:
            yield start, group
            start, group, size = index, [], 0
        group.append(text)
        size += len(text)
    if group:
        yield start, group


def _element(element_id: str | None, encoding: str, body: str, **attrs: Any) -> str:
    extra = "".join(f' data-{k}="{html.escape(str(v))}"' for k, v in attrs.items())
    ident = f' id="{element_id}"' if element_id else ""
    return f'<script type="application/x-ecab"{ident} data-enc="{encoding}"{extra}>{body}</script>'


def default_output(run_dirs: Sequence[Path]) -> Path:
    """One run: <run>/report.html. Several: compare/report.html beside the first run (where
    `python -m ecab.reduce compare` writes its tables by default)."""
    if len(run_dirs) == 1:
        return run_dirs[0] / REPORT_NAME
    return run_dirs[0].parent / "compare" / REPORT_NAME


def render(runs: Sequence[LoadedRun], *, compress: bool = True, title: str | None = None) -> str:
    """The report's HTML text."""
    blobs: list[str] = []
    main_runs = []
    for r, run in enumerate(runs):
        spans = []
        for c, (start, group) in enumerate(chunks(run.details)):
            encoding, body = encode("[" + ",".join(group) + "]", compress)
            blobs.append(_element(None, encoding, body, run=r, chunk=c))
            spans.append([start, start + len(group)])
        main_runs.append({**run.main, "chunks": spans})
    compare = None
    if len(runs) > 1:
        from ecab.view.compare import compare_section
        compare = compare_section([run.path for run in runs], [run.summary for run in runs],
                                  [run.episodes for run in runs], plots=embedded_plots)
    main = {"format": FORMAT, "generated": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": main_runs,
            "compare": compare}
    encoding, body = encode(to_json(main), compress)
    title = title or "ecab report: " + ", ".join(run.path.name for run in runs)
    page = asset("report.html")
    for marker, value in (("{{title}}", html.escape(title)), ("{{css}}", asset("report.css")),
                          ("{{js}}", asset("report.js")),
                          ("{{data}}", "\n".join([_element("ecab-main", encoding, body), *blobs]))):
        page = page.replace(marker, value, 1)
    return page


def write_report(run_dirs: Sequence[str | Path], out: str | Path | None = None, *, compress: bool = True,
                 catalog_dir: str | Path | None = None) -> Path:
    """Read the runs and write their report; returns its path."""
    if not run_dirs:
        raise ValueError("the report needs at least one run folder")
    paths = [Path(d) for d in run_dirs]
    runs = [load_run(p, catalog_dir=catalog_dir) for p in paths]
    target = Path(out) if out is not None else default_output(paths)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(render(runs, compress=compress), encoding="utf-8")
    tmp.replace(target)
    return target
