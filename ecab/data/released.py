"""The released EComAgentBench benchmark.jsonl: one file of the original repository at a pinned commit.

`python -m ecab.data fetch benchmark` downloads it (download.py: temporary name, checks, rename) into
`released_samples_default_path()`, where `benchmark=released` (conf/benchmark/released.yaml) and the tests
(tests/conftest.py) look for it. What is checked before the file gets its name:
- it is UTF-8 and has the pinned file's number of characters;
- every line is a task for ecab's own reader (`schema.iter_tasks`: the original format, unique ids), and
  there are as many tasks as the pinned file has;
- its sha256, when one is known (`--sha256`, or EXPECTED_SHA256 below).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path

from ecab.data.download import FetchError, download
from ecab.schema import FormatError, read_tasks

REPOSITORY = "Morizeyao/EComAgentBench_"
COMMIT = "867dcc59957d4c5f89e9cfd701ee20f91ef96a83"
FILE = "data/benchmark/benchmark.jsonl"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{REPOSITORY}"
BASE_URL_ENV = "ECAB_RELEASED_BASE_URL"   # another host serving <base>/<commit>/<file>, e.g. a mirror or a test

# What is known of the pinned file without having downloaded it, from a stored copy of the repository's text at
# that commit: 662 lines, one task each, and 6,029,661 characters. The file keeps non-ASCII characters as UTF-8
# (e.g. "…", "【"), so its size in bytes is larger than that and is not known here.
EXPECTED_TASKS = 662
EXPECTED_CHARACTERS = 6_029_661
# None on purpose: ecab was written on a machine without access to GitHub, so the file's sha256 has never been
# computed from the real download. The first fetch prints it; `--sha256 <hex>` pins it for a fetch, and once
# confirmed it belongs here (then every fetch checks it).
EXPECTED_SHA256: str | None = None


@dataclass(frozen=True)
class Release:
    """One released benchmark.jsonl and what is known of it before it is downloaded (None: not known)."""
    repository: str
    commit: str
    file: str
    tasks: int | None
    characters: int | None
    sha256: str | None

    def url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/{self.commit}/{self.file}"

    @property
    def name(self) -> str:
        return f"{self.repository}@{self.commit[:7]}:{self.file}"


PINNED = Release(REPOSITORY, COMMIT, FILE, EXPECTED_TASKS, EXPECTED_CHARACTERS, EXPECTED_SHA256)


@dataclass(frozen=True)
class Fetched:
    path: Path
    tasks: int
    sha256: str
    downloaded: bool         # False: the file was already there and passed the checks


def base_url_default() -> str:
    return os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL


def normalize_sha256(value: str) -> str:
    value = value.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise FetchError(f"--sha256 must be 64 hex digits, got {value!r}")
    return value


def check_release(path: Path, release: Release, *, sha256: str | None = None, label: str | None = None) -> Fetched:
    """Check a downloaded (or present) file against what is known of `release`; FetchError names what differs.
    `label` is how the file is called in messages (the URL while it still has its temporary name)."""
    label = label or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FetchError(f"{label}: cannot read it ({exc.strerror or exc})") from None
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FetchError(f"{label}: not UTF-8 text (byte {exc.start}); not the released benchmark.jsonl") from None
    # The stored count may be of code points or of UTF-16 units (which one is not known): either is accepted.
    counts = (len(text), len(text.encode("utf-16-le")) // 2)
    if release.characters is not None and release.characters not in counts:
        raise FetchError(f"{label}: {counts[0]:,} characters, the pinned file has {release.characters:,}; "
                         f"not {release.name}")
    try:
        tasks = read_tasks(path)
    except FormatError as exc:
        raise FetchError(str(FormatError(exc.reason, path=label, line=exc.line, field=exc.field))) from None
    if release.tasks is not None and len(tasks) != release.tasks:
        raise FetchError(f"{label}: {len(tasks)} tasks, the pinned file has {release.tasks}; not {release.name}")
    for source, expected in (("--sha256", sha256), ("the sha256 recorded in ecab/data/released.py", release.sha256)):
        if expected is not None and digest != expected:
            raise FetchError(f"{label}: sha256 {digest} differs from {source} ({expected})")
    return Fetched(Path(path), len(tasks), digest, downloaded=True)


def fetch_released(out: Path, *, base_url: str | None = None, sha256: str | None = None, force: bool = False,
                   progress: bool = True, release: Release | None = None) -> Fetched:
    """Put `release` (default: PINNED) at `out`, checked; a file already there is checked instead of downloaded
    (unless `force`). Raises FetchError with one line; on failure `out` is unchanged."""
    release = release or PINNED
    out = Path(out).expanduser()
    sha256 = normalize_sha256(sha256) if sha256 else None
    if out.exists() and not force:
        try:
            return replace(check_release(out, release, sha256=sha256), downloaded=False)
        except FetchError as exc:
            raise FetchError(f"{exc} (the file was already there; fetch it again with --force)") from None
    url = release.url(base_url or base_url_default())
    checked: list[Fetched] = []
    download(url, out, progress=progress,
             check=lambda part: checked.append(check_release(part, release, sha256=sha256, label=url)))
    return replace(checked[0], path=out)
