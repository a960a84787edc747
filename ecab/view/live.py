"""One run's report kept current while `--serve` runs: re-rendered from the run folder whenever its files
changed, so a run in progress shows its episodes as they are recorded and a re-judged or re-reduced run its
new verdicts, without writing anything into the folder.

Changes are told by the files' (mtime, size), looked at on each request (a stat per file, no reading): a
trajectory appended, an episode in flight's checkpoint written, a verdict file or summary.json rewritten. The
rendered page carries the version it was rendered from; the page polls status.json and reloads itself when the
version moved on (assets/report.js).
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from ecab.runs import RunFolder


def source_files(folder: RunFolder) -> list[Path]:
    """The files a run's report is read from (some may not exist yet)."""
    return [folder.manifest_path, folder.summary_path, folder.tasks_file, folder.config_path,
            folder.legacy_verdicts_path, *folder.part_files(), *folder.judge_files().values(),
            *folder.inflight_paths()]   # an episode in flight's checkpoint: the page's "in flight" line


def _stat(path: Path) -> tuple[str, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return path.name, info.st_mtime_ns, info.st_size


class LiveReport:
    """The report page and status of one run folder, rendered again only when its files changed."""

    def __init__(self, run_dir: str | Path, *, compress: bool = True, catalog_dir: str | Path | None = None):
        self.folder = RunFolder(run_dir)
        self.compress, self.catalog_dir = compress, catalog_dir
        self.version: str | None = None
        self.page: bytes = b""
        self.error: str | None = None
        self.run_status: dict[str, Any] = {}
        self._lock = threading.Lock()        # the server answers requests from several threads

    def signature(self) -> tuple:
        """What the report is read from, as (name, mtime, size) per file."""
        return tuple(_stat(path) for path in source_files(self.folder))

    def refresh(self) -> bool:
        """Render the page again if the folder changed since the last render; True when it did. A folder
        that cannot be read right now keeps the last page and records the error (status.json says it)."""
        from ecab.view.payload import load_run
        from ecab.view.writer import render
        with self._lock:
            signature = self.signature()
            version = hashlib.sha1(repr(signature).encode()).hexdigest()[:12]
            if version == self.version:
                return False
            try:
                run = load_run(self.folder.path, catalog_dir=self.catalog_dir)
                self.page = render([run], compress=self.compress, live=version).encode("utf-8")
                self.run_status, self.error = run.status.to_dict(), None
            except Exception as exc:  # noqa: BLE001 - the next change gets another try; the page says why
                self.error = f"{type(exc).__name__}: {exc}"
                if not self.page:
                    self.page = _error_page(self.folder.path, self.error)
            self.version = version
            return True

    def status(self) -> dict[str, Any]:
        """What status.json answers: the run's state (as of the last render) and the version of the page."""
        self.refresh()
        return {**self.run_status, "version": self.version, "error": self.error}


def _error_page(path: Path, error: str) -> bytes:
    import html
    # No data to poll with: the page asks again itself in a few seconds.
    return (f"<!DOCTYPE html><meta charset='utf-8'><meta http-equiv='refresh' content='5'><title>ecab report"
            f"</title><p>The report of {html.escape(str(path))} "
            f"could not be built: {html.escape(error)}</p>").encode("utf-8")
