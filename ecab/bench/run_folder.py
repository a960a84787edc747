"""`python -m ecab.bench.run_folder runs/<name>`: a run folder's bytes per episode, and what other encodings of
the same records would cost (docs/decisions.md#compact-run-folders).

A benchmark, not a test. It reads the run's trajectories and active verdicts through RunFolder and prints:

- the folder as it is on disk, per kind of file, in bytes per episode; beside it what the previous layout wrote
  for the same records (one uncompressed JSONL line per trajectory, verdicts.jsonl plus an identical
  verdicts.<judge>.jsonl), which is exact: the lines are the same `dumps` of the same records;
- per encoding of the trajectories, and of the verdicts: bytes per episode and the CPU to encode one episode
  (best of `--repeat`), for the encodings an append-only, kill -9-safe file can use (each episode on its own:
  a gzip member, a zstd or lz4 frame through pyarrow) and, for scale, whole-file compression, which needs the
  whole run in hand;
- the cost of one append as runners pay it (serialise, encode, write, fsync), uncompressed line vs gzip member,
  into a temporary folder on the same file system as the run.

    python -m ecab.bench.run_folder runs/<name> [--repeat 3]
"""
from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa

from ecab.runs import RunFolder
from ecab.runs.records import part_record
from ecab.schema import Trajectory, dumps

Encoder = Callable[[bytes], bytes]


def _arrow(codec: str, level: int | None = None) -> Encoder:
    encoder = pa.Codec(codec, compression_level=level)
    return lambda data: encoder.compress(data, asbytes=True)


PER_EPISODE: dict[str, Encoder] = {
    "none (JSONL line)": lambda data: data,
    "gzip member, level 1": lambda data: gzip.compress(data, compresslevel=1, mtime=0),
    "gzip member, level 6": lambda data: gzip.compress(data, compresslevel=6, mtime=0),
    "gzip member, level 9": lambda data: gzip.compress(data, compresslevel=9, mtime=0),
    "zstd frame, level 1": _arrow("zstd", 1),
    "zstd frame, level 3": _arrow("zstd", 3),
    "zstd frame, level 9": _arrow("zstd", 9),
    "lz4 frame": _arrow("lz4"),
}
WHOLE_FILE: dict[str, Encoder] = {
    "whole file, gzip 6": lambda data: gzip.compress(data, compresslevel=6, mtime=0),
    "whole file, zstd 3": _arrow("zstd", 3),
    "whole file, zstd 19": _arrow("zstd", 19),
}


def _kind(folder: RunFolder, path: Path) -> str:
    if path.is_relative_to(folder.trajectories_dir):
        return "trajectories"
    if path.name.startswith("verdicts"):
        return "verdicts"
    if path == folder.tasks_file:
        return "tasks.jsonl"
    if path == folder.report_path:
        return "report.html"
    return "other (summary, plots, config, manifest)"


def on_disk(folder: RunFolder) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in folder.path.rglob("*"):
        if path.is_file():
            sizes[_kind(folder, path)] = sizes.get(_kind(folder, path), 0) + path.stat().st_size
    return sizes


def encodings(lines: list[bytes], repeat: int) -> list[tuple[str, float, float]]:
    """(encoding, bytes per episode, CPU ms per episode to encode)."""
    rows, n = [], len(lines)
    for name, encode in PER_EPISODE.items():
        best, size = float("inf"), 0
        for _ in range(repeat):
            started = time.process_time()
            size = sum(len(encode(line)) for line in lines)
            best = min(best, time.process_time() - started)
        rows.append((name, size / n, 1e3 * best / n))
    whole = b"".join(lines)
    for name, encode in WHOLE_FILE.items():
        started = time.process_time()
        size = len(encode(whole))
        rows.append((name, size / n, 1e3 * (time.process_time() - started) / n))
    return rows


def append_cost(trajectories: list[Trajectory], repeat: int, near: Path) -> dict[str, float]:
    """Wall ms per append (serialise, encode, write, fsync), uncompressed line vs gzip member."""
    ways = {"JSONL line (previous layout)": lambda t: (dumps(t) + "\n").encode("utf-8"),
            "gzip member (this layout)": part_record}
    costs = {}
    with tempfile.TemporaryDirectory(prefix=".bench-run-folder-", dir=near) as tmp:
        for name, encode in ways.items():
            best = float("inf")
            for round_ in range(repeat):
                path = Path(tmp) / f"{len(costs)}-{round_}"
                started = time.perf_counter()
                for traj in trajectories:
                    with path.open("ab") as handle:
                        handle.write(encode(traj))
                        handle.flush()
                        os.fsync(handle.fileno())
                best = min(best, time.perf_counter() - started)
            costs[name] = 1e3 * best / len(trajectories)
    return costs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run folder, e.g. runs/heuristic-b100-generated")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best is reported")
    args = parser.parse_args(argv)
    folder = RunFolder(args.run_dir)
    trajectories = list(folder.iter_trajectories())
    judgements = folder.read_verdicts()
    n = len(trajectories)
    if not n:
        raise SystemExit(f"no trajectories in {folder.path}")
    traj_lines = [(dumps(t) + "\n").encode("utf-8") for t in trajectories]
    verdict_lines = [(dumps(j) + "\n").encode("utf-8") for j in judgements]
    print(f"{folder.path}: {n} episodes, {len(judgements)} judgements (judge {folder.active_judge() or '?'})\n")

    sizes = on_disk(folder)
    previous = {"trajectories": sum(map(len, traj_lines)), "verdicts": 2 * sum(map(len, verdict_lines))}
    print(f"{'on disk, bytes per episode':42} {'this folder':>12} {'previous layout':>16}")
    for kind in ("trajectories", "verdicts", "tasks.jsonl", "report.html", "other (summary, plots, config, manifest)"):
        print(f"{kind:42} {sizes.get(kind, 0) / n:12,.0f} {previous.get(kind, sizes.get(kind, 0)) / n:16,.0f}")
    print(f"{'total':42} {sum(sizes.values()) / n:12,.0f} "
          f"{sum({**sizes, **previous}.values()) / n:16,.0f}\n")

    # What ecab writes: each trajectory as a member of its own (appended), the verdicts as one stream (whole).
    chosen = {"trajectories": "gzip member, level 6", "verdicts": "whole file, gzip 6"}
    for label, lines in (("trajectories", traj_lines), ("verdicts", verdict_lines)):
        print(f"{label + ': encoding':34} {'B/episode':>10} {'ratio':>6} {'CPU ms/episode':>15}")
        rows = encodings(lines, args.repeat)
        raw = rows[0][1]
        for name, size, ms in rows:
            print(f"{name + (' *' if name == chosen[label] else ''):34} {size:10,.0f} {raw / size:6.1f} {ms:15.3f}")
        print()
    print("append, as runners do it (serialise, encode, write, fsync): wall ms per episode, best of "
          f"{args.repeat}")
    for name, ms in append_cost(trajectories, args.repeat, folder.path.parent).items():
        print(f"  {name:32} {ms:8.3f}")
    print("\n* what ecab writes (ecab/runs/gzip_members.py, RunFolder.write_verdicts)")


if __name__ == "__main__":
    main()
