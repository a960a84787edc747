"""The Amazon Reviews 2023 files, fetched from the Hugging Face Hub and laid out for `catalog=amazon`.

The dataset `McAuley-Lab/Amazon-Reviews-2023` keeps, per category, `raw/meta_categories/meta_<Cat>.jsonl`
(products) and `raw/review_categories/<Cat>.jsonl` (reviews). They are laid out under the output folder with
the same relative paths, the `raw/` layout `catalog/amazon.py::resolve_inputs` reads, so
`catalog=amazon catalog.path=<folder>` builds from them (the folder is catalog=amazon's default path).

How one file is fetched (download.py's rule: a final name only for a complete, verified file):
1. a HEAD on the Hub gives its size, its ETag (the sha256 of an LFS/Xet file, the git blob id of a small one)
   and the commit; every file of a fetch is then downloaded at that one commit;
2. `huggingface_hub.hf_hub_download` writes it into `<out>/.partial/` (its own temporary file there, a dropped
   connection resumed with HTTP ranges, progress bars, size checked);
3. its checksum is compared with the ETag, and only then is it renamed to its final path under `<out>`.
`<out>/fetch.json` records each file's commit, size and ETag, so a re-run skips files already fetched (and
re-fetches one whose ETag changed). A re-run after a failure starts that file over.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ecab.data.download import (FetchError, check_free_space, first_line, format_bytes, git_blob_sha1_of,
                                os_error_line, promote, sha256_of)

REPO_ID = "McAuley-Lab/Amazon-Reviews-2023"
REPO_TYPE = "dataset"
# The paper's environment: these four categories in full (docs/original-harness.md §1.1).
PAPER_CATEGORIES = ("All_Beauty", "Electronics", "Cell_Phones_and_Accessories", "Office_Products")
STAGING = ".partial"
MANIFEST = "fetch.json"
_CATEGORY = re.compile(r"^[A-Za-z0-9_]+$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")


def meta_file(category: str) -> str:
    return f"raw/meta_categories/meta_{category}.jsonl"


def review_file(category: str) -> str:
    return f"raw/review_categories/{category}.jsonl"


def files_of(categories: list[str]) -> list[str]:
    """The repository paths of the categories' metadata and reviews, metadata first."""
    bad = [c for c in categories if not _CATEGORY.match(c)]
    if bad or not categories:
        raise FetchError(f"--categories: not a category name: {', '.join(bad) or '(none given)'} "
                         f"(names like {','.join(PAPER_CATEGORIES)})")
    return [meta_file(c) for c in categories] + [review_file(c) for c in categories]


@dataclass(frozen=True)
class Remote:
    """A file on the Hub as its HEAD describes it."""
    file: str
    size: int | None
    etag: str
    commit: str


@dataclass(frozen=True)
class Outcome:
    file: str
    path: Path
    size: int
    checked: str             # what was compared: "sha256", "git blob id" or "size"
    downloaded: bool         # False: already there from an earlier fetch


def fetch_amazon(categories: list[str], out: Path, *, revision: str = "main", endpoint: str | None = None,
                 progress: bool = True, report: Callable[[str], None] = print) -> list[Outcome]:
    """Fetch the categories' files into `out` (laid out as on the Hub); FetchError with one line on failure."""
    _require_online()
    out = Path(out).expanduser()
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    remotes = _pinned_to_one_commit([_head(f, revision, endpoint) for f in files_of(categories)], endpoint)
    manifest = _read_manifest(out)
    todo = [r for r in remotes if not _is_current(out, r, manifest)]
    check_free_space(out, sum(r.size or 0 for r in todo), f"{len(todo)} file(s)")
    outcomes = [Outcome(r.file, out / r.file, (out / r.file).stat().st_size, "recorded ETag", False)
                for r in remotes if r not in todo]
    for n, remote in enumerate(todo, 1):
        size = f" ({format_bytes(remote.size)})" if remote.size is not None else ""
        report(f"[{n}/{len(todo)}] {remote.file}{size}")
        outcome = _fetch_one(remote, out, endpoint, progress)
        manifest["files"][remote.file] = {"commit": remote.commit, "size": outcome.size, "etag": remote.etag,
                                          "checked": outcome.checked}
        _write_manifest(out, manifest)
        outcomes.append(outcome)
    shutil.rmtree(out / STAGING, ignore_errors=True)
    return sorted(outcomes, key=lambda o: o.file)


def _require_online() -> None:
    from huggingface_hub import constants

    if getattr(constants, "HF_HUB_OFFLINE", False):
        raise FetchError("HF_HUB_OFFLINE is set: huggingface_hub will not download; unset it (or set "
                         "HF_HUB_OFFLINE=0) for this command")


def _head(file: str, revision: str, endpoint: str | None) -> Remote:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(REPO_ID, file, repo_type=REPO_TYPE, revision=revision, endpoint=endpoint)
    try:
        meta = get_hf_file_metadata(url, endpoint=endpoint)
    except Exception as exc:   # httpx / huggingface_hub errors differ by version: each becomes one line
        raise FetchError(_network_error_line(exc, file, revision, url)) from None
    if not meta.etag or not meta.commit_hash:
        raise FetchError(f"{url}: the reply has no ETag or X-Repo-Commit header; is HF_ENDPOINT a Hugging Face Hub?")
    return Remote(file, meta.size, meta.etag.strip('"').lower(), meta.commit_hash)


def _pinned_to_one_commit(remotes: list[Remote], endpoint: str | None) -> list[Remote]:
    """Every file at the first file's commit, so one fetch never mixes two versions of the dataset."""
    commit = remotes[0].commit
    return [r if r.commit == commit else _head(r.file, commit, endpoint) for r in remotes]


def _network_error_line(exc: Exception, file: str, revision: str, url: str) -> str:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status == 404:
        return (f"HTTP 404: {REPO_ID} has no {file} at revision {revision} ({url}); is the category name right? "
                "(names are case-sensitive, e.g. Cell_Phones_and_Accessories)")
    if status is not None:
        return f"HTTP {status} for {file}: {url} ({first_line(exc)})"
    return f"cannot reach the Hugging Face Hub for {file} ({url}): {first_line(exc)}"


def _is_current(out: Path, remote: Remote, manifest: dict) -> bool:
    """Already fetched: the file is there with the size and ETag recorded when it was verified."""
    final = out / remote.file
    recorded = manifest["files"].get(remote.file) or {}
    return (final.is_file() and recorded.get("etag") == remote.etag
            and final.stat().st_size == recorded.get("size") and remote.size in (None, recorded.get("size")))


def _fetch_one(remote: Remote, out: Path, endpoint: str | None, progress: bool) -> Outcome:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import disable_progress_bars

    staging = out / STAGING
    try:
        if progress:
            staged = hf_hub_download(REPO_ID, remote.file, repo_type=REPO_TYPE, revision=remote.commit,
                                     local_dir=staging, endpoint=endpoint)
        else:
            with disable_progress_bars():
                staged = hf_hub_download(REPO_ID, remote.file, repo_type=REPO_TYPE, revision=remote.commit,
                                         local_dir=staging, endpoint=endpoint)
    except OSError as exc:
        if exc.errno is not None:
            raise FetchError(os_error_line(exc, out)) from None
        raise FetchError(f"{remote.file}: download failed: {first_line(exc)}") from None
    except Exception as exc:
        raise FetchError(f"{remote.file}: download failed: {first_line(exc)}") from None
    staged = Path(staged)
    checked = _verify(staged, remote)
    size = staged.stat().st_size
    promote(staged, out / remote.file)
    return Outcome(remote.file, out / remote.file, size, checked, True)


def _verify(staged: Path, remote: Remote) -> str:
    """Compare the staged file with the HEAD's size and ETag; a mismatch removes it and raises FetchError."""
    size = staged.stat().st_size
    problem, checked = None, "size"
    if remote.size is not None and size != remote.size:
        problem = f"{size} bytes, the Hub says {remote.size}"
    elif _SHA256.match(remote.etag):
        checked, got = "sha256", sha256_of(staged)
        problem = None if got == remote.etag else f"sha256 {got} differs from the Hub's {remote.etag}"
    elif _GIT_SHA1.match(remote.etag):
        checked, got = "git blob id", git_blob_sha1_of(staged)
        problem = None if got == remote.etag else f"git blob id {got} differs from the Hub's {remote.etag}"
    if problem:
        staged.unlink(missing_ok=True)
        raise FetchError(f"{remote.file}: {problem}; the download was removed, re-run to fetch it again")
    return checked


def _read_manifest(out: Path) -> dict:
    path = out / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError):
        data = {}   # unreadable: every file is checked again, which rewrites it
    data.setdefault("repo", REPO_ID)
    if not isinstance(data.get("files"), dict):
        data["files"] = {}
    return data


def _write_manifest(out: Path, manifest: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, out / MANIFEST)
