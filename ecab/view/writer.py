"""Write the report: one self-contained HTML file (the page's HTML, CSS and JS from assets/, the data embedded).

The data goes into inert `<script type="application/x-ecab">` elements the page decodes itself:
- `ecab-main`: every run's page data and episode rows, plus the compare data; decoded at load.
- one element per chunk of about CHUNK_BYTES of episode details per run, its repeated long strings stored
  once (shared_strings); decoded when an episode of that chunk is opened, so a 10k-episode run opens as
  fast as its list renders.
Each is gzip then base64 (the browser's DecompressionStream inflates it) or, with compress=False, the JSON
itself; docs/decisions.md#report-size has the measured sizes and load times of both.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import html
import re
import time
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from ecab.runs import RunFolder
from ecab.view.payload import LoadedRun, embedded_plots, load_run, to_json

CHUNK_BYTES = 1024 * 1024     # JSON per detail chunk (before sharing strings): ms to inflate and parse
SHARED_MIN = 128              # strings at least this long are stored once per chunk (shared_strings)
SHARED_KEY = "\u0001"         # the key of a reference to a shared string: {"\u0001": n}
FORMAT = 1
COMPARE_NAME_MAX = 120        # characters of a compare report's file name before its hash suffix


def asset(name: str) -> str:
    return resources.files("ecab.view").joinpath("assets", name).read_text(encoding="utf-8")


def encode(text: str, compress: bool) -> tuple[str, str]:
    """(encoding name, element body) for a JSON text."""
    if not compress:
        return "json", text
    packed = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    return "gzip64", base64.b64encode(packed).decode("ascii")


def chunks(details: Sequence[dict[str, Any]], limit: int = CHUNK_BYTES) -> Iterable[tuple[int, list[dict]]]:
    """(first episode index, [detail, ...]) groups of consecutive episodes of about `limit` bytes of JSON."""
    start, group, size = 0, [], 0
    for index, detail in enumerate(details):
        length = len(to_json(detail))
        if group and size + length > limit:
            yield start, group
            start, group, size = index, [], 0
        group.append(detail)
        size += length
    if group:
        yield start, group


def _long_strings(value: Any, counts: Counter) -> None:
    if isinstance(value, str):
        if len(value) >= SHARED_MIN:
            counts[value] += 1
    elif isinstance(value, list):
        for item in value:
            _long_strings(item, counts)
    elif isinstance(value, dict):
        for item in value.values():
            _long_strings(item, counts)


def _refer(value: Any, index: dict[str, int]) -> Any:
    if isinstance(value, str):
        return {SHARED_KEY: index[value]} if value in index else value
    if isinstance(value, list):
        return [_refer(item, index) for item in value]
    if isinstance(value, dict):
        return {k: _refer(item, index) for k, item in value.items()}
    return value


def shared_strings(items: list[dict[str, Any]]) -> dict[str, Any]:
    """{"strings", "items"}: each long string that occurs more than once in the chunk is stored once and
    referred to as {SHARED_KEY: its number}. Trials of one task repeat whole tool results (the profile, the
    same product pages, the same searches) further apart than gzip's 32 KB window reaches."""
    counts: Counter = Counter()
    _long_strings(items, counts)
    strings = [text for text, n in counts.items() if n > 1]
    index = {text: k for k, text in enumerate(strings)}
    return {"strings": strings, "items": _refer(items, index) if index else items}


def _element(element_id: str | None, encoding: str, body: str, **attrs: Any) -> str:
    extra = "".join(f' data-{k}="{html.escape(str(v))}"' for k, v in attrs.items())
    ident = f' id="{element_id}"' if element_id else ""
    return f'<script type="application/x-ecab"{ident} data-enc="{encoding}"{extra}>{body}</script>'


COMPARE_JOIN = "-vs-"


def compare_name(run_dirs: Sequence[Path]) -> str:
    """compare-<a>-vs-<b>[-vs-...].html: named by its runs, so comparing other runs never overwrites it. The
    name ends in a hash of the runs' full paths instead when it is long, when the runs are in different
    folders (two runs/x could then share a name), and when the runs cannot be read back from it: a run name
    with `-vs-` in it or at its edge (runs p-vs-q and r, and p and q-vs-r, would both be p-vs-q-vs-r), or one
    whose characters had to be replaced."""
    raw = [Path(d).resolve().name for d in run_dirs]
    names = [re.sub(r"[^A-Za-z0-9_.=@+-]+", "_", name) for name in raw]
    joined = COMPARE_JOIN.join(names)
    stem = "compare-" + joined
    parents = {Path(d).resolve().parent for d in run_dirs}
    # every "-vs-" of the joined name (overlapping ones too) must be one of the joins, else it has two readings
    ambiguous = len(re.findall(f"(?={re.escape(COMPARE_JOIN)})", joined)) != len(names) - 1 or names != raw
    if len(stem) > COMPARE_NAME_MAX or len(parents) > 1 or ambiguous:
        digest = hashlib.sha1("\n".join(str(Path(d).resolve()) for d in run_dirs).encode()).hexdigest()[:10]
        stem = stem[:COMPARE_NAME_MAX - len(digest) - 1] + "-" + digest
    return stem + ".html"


def default_output(run_dirs: Sequence[Path]) -> Path:
    """One run: <run>/report.html. Several: compare/compare-<a>-vs-<b>.html beside the first run (the
    folder where `python -m ecab.reduce compare` writes its tables by default)."""
    if len(run_dirs) == 1:
        return RunFolder(run_dirs[0]).report_path
    return run_dirs[0].parent / "compare" / compare_name(run_dirs)


def render(runs: Sequence[LoadedRun], *, compress: bool = True, title: str | None = None,
           live: str | None = None) -> str:
    """The report's HTML text. `live`: the version of the data the live server rendered (server.py); the
    page then polls status.json beside it and reloads when the version changes."""
    blobs: list[str] = []
    main_runs = []
    for r, run in enumerate(runs):
        spans = []
        for c, (start, group) in enumerate(chunks(run.details)):
            encoding, body = encode(to_json(shared_strings(group)), compress)
            blobs.append(_element(None, encoding, body, run=r, chunk=c))
            spans.append([start, start + len(group)])
        main_runs.append({**run.main, "chunks": spans})
    compare = None
    if len(runs) > 1:
        from ecab.view.compare import compare_section
        unfinished = [f"{run.path} ({run.status.text()})" for run in runs if not run.status.finished]
        if unfinished:
            raise ValueError(f"compare needs finished runs; {', '.join(unfinished)}: view it alone, or compare "
                             "it when it finishes")
        compare = compare_section([run.path for run in runs], [run.summary for run in runs],
                                  [run.episodes for run in runs], plots=embedded_plots)
    main = {"format": FORMAT, "generated": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": main_runs,
            "compare": compare, "live": live}
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
    write_atomic(target, render(runs, compress=compress))
    return target


def write_atomic(target: Path, text: str) -> None:
    """A reader (the browser, the live server) never sees half a page: a temporary name, then a rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
