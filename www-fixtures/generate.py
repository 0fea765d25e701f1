#!/usr/bin/env python3
"""Deterministic benchmark file-set generator for weft (stdlib only).

Writes N files under a SPECweb99-like tree (``dirNNNNN/classC_F.EXT``) with sizes from the
SURGE file-size model, plus a ``MANIFEST`` that weft-load reads. The same arguments and seed
always give the same tree, byte for byte.

Size model (Barford & Crovella, "Generating Representative Web Workloads for Network and
Server Performance Evaluation", SIGMETRICS 1998; parameters quoted from memory, not
re-checked against the paper):

* body, drawn with probability 0.93: lognormal in ln-bytes, mu = 9.357, sigma = 1.318
  (median ~11.6 KB), truncated to sizes below k = 133,000 bytes;
* tail, drawn with probability 0.07: Pareto, alpha = 1.1, k = 133,000 bytes (sizes >= k).

Truncating the body at k makes "tail file" well defined: every size >= k came from the
Pareto part. The raw draws are then fitted to the requested total:

1. draw raw sizes x_i from the mixture above;
2. find by bisection the scale factor f with sum(clamp(f * x_i, MIN_SIZE, max_size)) = total;
   the upper clamp is the documented cap on the Pareto tail (alpha = 1.1 has infinite
   variance, so an uncapped draw can be a gigabyte), the lower one keeps room for the
   per-file header line;
3. floor each clamped size to whole bytes and hand the few bytes lost to rounding out one
   at a time, in file order, so the total is exactly the target.

Scaling by one factor keeps the shape (sigma, alpha and the 93/7 split in ln-space) and moves
the location: mu becomes mu + ln f and k becomes f * k. For the presets f is about 0.4
(``small``) and 2.3 (``thesis``); ``--print-stats`` shows it.

Everything random comes from ``random.Random(int)`` streams, one per purpose (sizes, types,
ranks), using only ``random()``, whose sequence for a given seed Python guarantees across
versions; file bodies come from SHAKE-256. Sizes go through exp/log, so a C library that
rounds a last bit differently could in principle move a size by a byte.

Run with ``--help`` for the command line; ``www-fixtures/README.md`` documents the manifest
and the file contents.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import os
import random
import re
import statistics
import sys
import time
import zlib
from pathlib import Path

FORMAT_VERSION = "v1"
MANIFEST = "MANIFEST"
MANIFEST_PARTIAL = "MANIFEST.incomplete"  # present while a set is being written
DEFAULT_SEED = 1998  # SURGE's year; any fixed value would do

# SURGE file-size model (see the module docstring).
BODY_MU = 9.357
BODY_SIGMA = 1.318
TAIL_ALPHA = 1.1
TAIL_K = 133_000
TAIL_PROBABILITY = 0.07

MIN_SIZE = 128  # bytes; SPECweb99's smallest file is 102 bytes, and the header line must fit
MAX_SIZE_CEILING = 64 * 1024 * 1024  # default cap: picked, large enough for the thesis set
FILES_PER_DIR = 100  # SPECweb99 has 36 per directory; a few hundred is the stated limit
MAX_FILES = FILES_PER_DIR * 100_000  # dirNNNNN has five digits

# Extension mix, exact counts (largest remainder), independent of size; PNG bodies are binary.
TYPE_MIX = (("html", 0.60), ("png", 0.20), ("js", 0.08), ("css", 0.07), ("txt", 0.05))
BINARY_TYPES = frozenset({"png"})
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

PRESETS = {
    "small": {"files": 2_000, "total_bytes": 50_000_000},  # CI: ~50 MB
    # The Cforall thesis' static-webserver experiment, as the issue describes it.
    "thesis": {"files": 30_000, "total_bytes": 4_500_000_000},
}

BLOCK = 64 * 1024  # the repeated filler block
CHUNK = 1024 * 1024  # largest single write
TEXT_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ."  # 64 characters
LINE = 64  # text filler puts a newline every LINE bytes

HEADER_RE = re.compile(
    r"^# weft-fileset v1 preset=(?P<preset>\S+) seed=(?P<seed>\d+) "
    r"files=(?P<files>\d+) bytes=(?P<bytes>\d+)$")
PATH_RE = re.compile(r"^/dir\d{5}/class\d+_\d+\.(?:html|css|js|png|txt)$")


class UsageError(Exception):
    """Arguments that describe no file set; main() reports it and exits 2."""


@dataclasses.dataclass(frozen=True)
class Params:
    """Everything that determines a file set."""
    preset: str
    files: int
    total_bytes: int
    seed: int
    max_size: int


@dataclasses.dataclass(frozen=True)
class Entry:
    """One planned file: URL path, exact size, popularity rank, and which part drew it."""
    index: int
    path: str
    size: int
    rank: int
    tail: bool


@dataclasses.dataclass(frozen=True)
class Plan:
    """A whole file set before anything is written; entries are in file (index) order."""
    params: Params
    entries: list[Entry]
    scale: float
    capped: int


# --------------------------------------------------------------------------- planning

def default_max_size(files: int, total_bytes: int) -> int:
    """Returns the default size cap: 4% of the total, at most 64 MiB, at least 4x the mean."""
    cap = min(MAX_SIZE_CEILING, total_bytes // 25)
    return max(cap, 4 * -(-total_bytes // files), MIN_SIZE)


def stream(seed: int, purpose: str) -> random.Random:
    """Returns the generator for one purpose; streams are independent so that, e.g., changing
    the type mix leaves sizes alone."""
    digest = hashlib.sha256(f"weft-fileset/{seed}/{purpose}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def draw_raw_sizes(n: int, rng: random.Random) -> list[tuple[float, bool]]:
    """Returns n (size, is_tail) draws from the SURGE body/tail mixture, unscaled."""
    normal = statistics.NormalDist()
    body_cdf_at_k = normal.cdf((math.log(TAIL_K) - BODY_MU) / BODY_SIGMA)  # ~0.968
    draws = []
    for _ in range(n):
        # Always two draws per file, so the stream stays aligned whichever part is chosen.
        pick, u = rng.random(), 1.0 - rng.random()  # u in (0, 1]
        if pick < TAIL_PROBABILITY:
            draws.append((TAIL_K * u ** (-1.0 / TAIL_ALPHA), True))
        else:
            # Inverse CDF of the lognormal restricted to (0, k].
            z = normal.inv_cdf(u * body_cdf_at_k)
            draws.append((math.exp(BODY_MU + BODY_SIGMA * z), False))
    return draws


def fit_sizes(raw: list[float], total: int, max_size: int) -> tuple[list[int], float]:
    """Returns integer sizes in [MIN_SIZE, max_size] summing exactly to total, and the scale f."""
    def clamped_sum(f: float) -> float:
        return math.fsum(min(max(f * x, MIN_SIZE), max_size) for x in raw)

    # Bisection in ln f; the sum is continuous and non-decreasing in f.
    lo = math.log(MIN_SIZE / max(raw))  # every file at MIN_SIZE
    hi = math.log(max_size / min(raw))  # every file at max_size
    for _ in range(64):
        mid = (lo + hi) / 2
        if clamped_sum(math.exp(mid)) <= total:
            lo = mid
        else:
            hi = mid
    f = math.exp(lo)
    sizes = [min(max(int(f * x), MIN_SIZE), max_size) for x in raw]

    # Flooring lost fewer than len(raw) bytes (or float error overshot a little): spread the
    # difference one byte per file, in file order, over files that have room.
    rest = total - sum(sizes)
    step = 1 if rest > 0 else -1
    while rest:
        moved = False
        for i, s in enumerate(sizes):
            if rest and MIN_SIZE <= s + step <= max_size:
                sizes[i] += step
                rest -= step
                moved = True
        if not moved:
            raise UsageError("cannot fit the sizes to the total")  # excluded by validate()
    return sizes, f


def type_counts(n: int) -> list[tuple[str, int]]:
    """Returns how many files of each type n files get: TYPE_MIX by largest remainder."""
    exact = [(ext, share * n) for ext, share in TYPE_MIX]
    counts = {ext: int(x) for ext, x in exact}
    by_remainder = sorted(exact, key=lambda e: (-(e[1] - int(e[1])), e[0]))
    for ext, _ in by_remainder[: n - sum(counts.values())]:
        counts[ext] += 1
    return [(ext, counts[ext]) for ext, _ in TYPE_MIX]


def shuffled(items: list, rng: random.Random) -> list:
    """Returns a Fisher-Yates shuffle of items driven only by rng.random() (version-stable)."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return out


def size_class(size: int) -> int:
    """Returns the SPECweb99-style class: 0 below 1 KB, 1 below 10 KB, 2 below 100 KB, ..."""
    return max(0, len(str(size)) - 3)


def validate(params: Params) -> None:
    """Raises UsageError when params cannot describe a file set."""
    if not 1 <= params.files <= MAX_FILES:
        raise UsageError(f"--files must be between 1 and {MAX_FILES}")
    if not 0 <= params.seed < 2**63:
        raise UsageError("--seed must be between 0 and 2^63-1")
    if params.max_size < MIN_SIZE:
        raise UsageError(f"--max-size must be at least {MIN_SIZE}")
    lo, hi = params.files * MIN_SIZE, params.files * params.max_size
    if not lo <= params.total_bytes <= hi:
        raise UsageError(f"--total-bytes must be between {lo} and {hi} for {params.files} files "
                         f"(sizes lie in [{MIN_SIZE}, {params.max_size}])")


def build_plan(params: Params) -> Plan:
    """Returns the full plan (paths, sizes, ranks) for params; writes nothing."""
    validate(params)
    n = params.files
    draws = draw_raw_sizes(n, stream(params.seed, "sizes"))
    sizes, scale = fit_sizes([x for x, _ in draws], params.total_bytes, params.max_size)

    types = shuffled([ext for ext, count in type_counts(n) for _ in range(count)],
                     stream(params.seed, "types"))
    # Popularity: a seeded permutation, drawn apart from sizes, so rank and size are
    # independent (SURGE models popularity and size separately).
    ranks = shuffled(list(range(1, n + 1)), stream(params.seed, "ranks"))

    entries = []
    next_in_class: dict[tuple[int, int], int] = {}
    for i in range(n):
        d, c = i // FILES_PER_DIR, size_class(sizes[i])
        f = next_in_class.get((d, c), 0)
        next_in_class[(d, c)] = f + 1
        path = f"/dir{d:05d}/class{c}_{f}.{types[i]}"
        entries.append(Entry(i, path, sizes[i], ranks[i], draws[i][1]))
    capped = sum(1 for s in sizes if s == params.max_size)
    return Plan(params, entries, scale, capped)


def render_manifest(plan: Plan) -> str:
    """Returns the MANIFEST text for plan: header, comments, then PATH\\tSIZE\\tRANK by rank."""
    p = plan.params
    mix = " ".join(f"{ext}={count}" for ext, count in type_counts(p.files))
    lines = [
        f"# weft-fileset {FORMAT_VERSION} preset={p.preset} seed={p.seed} "
        f"files={p.files} bytes={p.total_bytes}",
        "# generator: www-fixtures/generate.py (see www-fixtures/README.md)",
        f"# sizes: SURGE mixture, lognormal mu={BODY_MU} sigma={BODY_SIGMA} below k={TAIL_K} "
        f"(p={1 - TAIL_PROBABILITY:.2f}), Pareto alpha={TAIL_ALPHA} k={TAIL_K} "
        f"(p={TAIL_PROBABILITY:.2f}); scaled by {plan.scale:.6f}, clamped to "
        f"[{MIN_SIZE}, {p.max_size}] ({plan.capped} files at the cap)",
        f"# types: {mix}; {FILES_PER_DIR} files per directory",
        "# columns: PATH<TAB>SIZE<TAB>RANK, sorted by RANK (1 = most popular)",
    ]
    for e in sorted(plan.entries, key=lambda e: e.rank):
        lines.append(f"{e.path}\t{e.size}\t{e.rank}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- file contents

_blocks: dict[tuple[int, bool], memoryview] = {}


def filler(seed: int, binary: bool) -> memoryview:
    """Returns BLOCK + CHUNK bytes: the seed's filler block repeated, so any CHUNK-long window
    starting inside the first block is one slice."""
    key = (seed, binary)
    if key not in _blocks:
        kind = "binary" if binary else "text"
        block = bytearray(hashlib.shake_256(f"weft-fileset/{seed}/{kind}".encode()).digest(BLOCK))
        if not binary:
            block = bytearray(block.translate(bytes(TEXT_ALPHABET[b % 64] for b in range(256))))
            block[LINE - 1::LINE] = b"\n" * (BLOCK // LINE)
        _blocks[key] = memoryview(bytes(block) * (CHUNK // BLOCK + 1))
    return _blocks[key]


def content_chunks(seed: int, path: str, size: int):
    """Yields the exact bytes of one file, in pieces of at most CHUNK bytes."""
    binary = path.rsplit(".", 1)[-1] in BINARY_TYPES
    head = (PNG_MAGIC if binary else b"") + f"weft-fileset seed={seed} {path} {size}\n".encode()
    assert len(head) <= size, "MIN_SIZE leaves room for the header"  # paths are short
    yield head
    # The header names the path, so no two files are equal; the per-path start offset makes
    # the bodies differ too.
    data, offset, left = filler(seed, binary), zlib.crc32(path.encode()) % BLOCK, size - len(head)
    while left:
        take = min(left, CHUNK)
        yield data[offset:offset + take]
        offset, left = (offset + take) % BLOCK, left - take


# --------------------------------------------------------------------------- writing and checking

def read_manifest(path: Path) -> tuple[dict[str, str] | None, list[tuple[str, int, int]], list[str]]:
    """Returns (header fields or None, entries in file order, format problems) of a MANIFEST."""
    problems: list[str] = []
    entries: list[tuple[str, int, int]] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        problems.append("MANIFEST does not end with a newline")
    m = HEADER_RE.match(lines[0]) if lines else None
    if not m:
        problems.append("first line is not '# weft-fileset v1 preset=P seed=S files=N bytes=B'")
    for no, line in enumerate(lines[1:], start=2):
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not fields[0].startswith("/") or \
                not fields[1].isdigit() or not fields[2].isdigit():
            problems.append(f"line {no}: not PATH<TAB>SIZE<TAB>RANK: {line!r}")
            continue
        entries.append((fields[0], int(fields[1]), int(fields[2])))
    header = m.groupdict() if m else None
    if header:
        if len(entries) != int(header["files"]):
            problems.append(f"header says files={header['files']}, manifest lists {len(entries)}")
        if sum(s for _, s, _ in entries) != int(header["bytes"]):
            problems.append(f"header says bytes={header['bytes']}, sizes sum to "
                            f"{sum(s for _, s, _ in entries)}")
    if [r for _, _, r in entries] != list(range(1, len(entries) + 1)):
        problems.append("ranks are not 1..N in order")
    if len({p for p, _, _ in entries}) != len(entries):
        problems.append("a path is listed twice")
    return header, entries, problems


def sizes_match(root: Path, entries) -> bool:
    """Returns whether every listed file exists under root with its listed size."""
    for path, size, _ in entries:
        try:
            if (root / path[1:]).stat().st_size != size:
                return False
        except OSError:
            return False
    return True


def remove_stale(root: Path, keep: set[str]) -> None:
    """Deletes files an earlier set listed (in MANIFEST or MANIFEST.incomplete) that the new set
    does not, then empty dirNNNNN folders; touches nothing that is not a set path."""
    for name in (MANIFEST, MANIFEST_PARTIAL):
        old = root / name
        if not old.exists():
            continue
        for line in old.read_text(encoding="utf-8", errors="replace").split("\n"):
            path = line.split("\t", 1)[0]
            if PATH_RE.match(path) and path not in keep:
                (root / path[1:]).unlink(missing_ok=True)
        old.unlink()
    for d in root.glob("dir[0-9][0-9][0-9][0-9][0-9]"):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()


def write_set(plan: Plan, root: Path, manifest_text: str, progress) -> None:
    """Writes every file of plan under root, then MANIFEST last (so a torn run has none)."""
    root.mkdir(parents=True, exist_ok=True)
    remove_stale(root, {e.path for e in plan.entries})
    (root / MANIFEST_PARTIAL).write_text(manifest_text, encoding="utf-8")
    seed, total, written, next_report = plan.params.seed, plan.params.total_bytes, 0, 0.1
    made: set[str] = set()
    for e in plan.entries:
        folder = e.path[1:e.path.index("/", 1)]
        if folder not in made:
            (root / folder).mkdir(exist_ok=True)
            made.add(folder)
        with open(root / e.path[1:], "wb") as out:
            for piece in content_chunks(seed, e.path, e.size):
                out.write(piece)
        written += e.size
        if progress and written >= next_report * total:
            progress(f"  {written / total:4.0%}  {written / 1e6:,.0f} MB")
            next_report += 0.1
    os.replace(root / MANIFEST_PARTIAL, root / MANIFEST)


def verify_set(root: Path) -> list[str]:
    """Returns every problem found in the set under root: manifest format, sizes, contents."""
    manifest = root / MANIFEST
    if not manifest.is_file():
        return [f"{manifest}: no MANIFEST (never generated, or interrupted)"]
    header, entries, problems = read_manifest(manifest)
    if header is None:
        return problems
    seed = int(header["seed"])
    for path, size, _ in entries:
        if not PATH_RE.match(path):
            problems.append(f"{path}: not a generated path")
            continue
        file = root / path[1:]
        try:
            actual = file.stat().st_size
        except OSError as err:
            problems.append(f"{path}: {err.strerror}")
            continue
        if actual != size:
            problems.append(f"{path}: size {actual}, manifest says {size}")
            continue
        with open(file, "rb") as f:
            for want in content_chunks(seed, path, size):
                if f.read(len(want)) != want:
                    problems.append(f"{path}: content differs from what seed {seed} gives")
                    break
    return problems


def percentile(sorted_values: list[int], p: float) -> int:
    """Returns the nearest-rank p-th percentile of an ascending list."""
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


def stats_lines(plan: Plan) -> list[str]:
    """Returns the --print-stats report for plan."""
    sizes = sorted(e.size for e in plan.entries)
    n, total = len(sizes), sum(sizes)
    tail = [e.size for e in plan.entries if e.tail]
    top = sizes[n - max(1, round(n * TAIL_PROBABILITY)):]
    p = plan.params
    return [
        f"preset        {p.preset}  seed={p.seed}",
        f"files         {n}",
        f"total bytes   {total:,}  (target {p.total_bytes:,})",
        f"min           {sizes[0]:,}  (floor {MIN_SIZE}; {sizes.count(MIN_SIZE)} files at the floor)",
        f"median        {statistics.median(sizes):,.0f}",
        f"mean          {total / n:,.0f}",
        f"p90           {percentile(sizes, 90):,}",
        f"p99           {percentile(sizes, 99):,}",
        f"max           {sizes[-1]:,}  (cap {p.max_size:,}; {plan.capped} files at the cap)",
        f"tail files    {len(tail)} ({len(tail) / n:.1%}) drawn from the Pareto tail, "
        f"holding {sum(tail) / total:.1%} of the bytes",
        f"largest 7%    {len(top)} files hold {sum(top) / total:.1%} of the bytes",
        f"scale         {plan.scale:.6f}  (raw SURGE draws x scale = sizes, before clamping)",
        "types         " + " ".join(f"{ext}={c}" for ext, c in type_counts(n)),
    ]


# --------------------------------------------------------------------------- command line

def parse_bytes(text: str) -> int:
    """Returns the byte count of '4500000000', '4.5G', '50M', '64MiB' and the like."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKMGT]?)(i?)B?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a byte count: {text!r}")
    power = " kMGT".index(m.group(2).replace("K", "k") or " ")
    base = 1024 if m.group(3) else 1000
    return round(float(m.group(1)) * base ** power)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Returns the parsed command line."""
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(
        description="Generate a deterministic benchmark file set (SURGE sizes, SPECweb99-like "
                    "tree) and its MANIFEST. Re-running with the same arguments is a no-op.",
        epilog="Presets: " + "; ".join(f"{k}: {v['files']} files, {v['total_bytes']:,} bytes"
                                       for k, v in PRESETS.items())
        + f". Default output: {here.name}/generated/PRESET (custom sets: generated/custom). "
          "Exit status: 0 ok, 1 --verify found problems, 2 bad arguments.")
    ap.add_argument("--preset", choices=sorted(PRESETS),
                    help="a named set (default small, unless --files/--total-bytes are given)")
    ap.add_argument("--files", type=int, metavar="N", help="custom set: number of files")
    ap.add_argument("--total-bytes", type=parse_bytes, metavar="B",
                    help="custom set: exact total size (e.g. 200000000, 200M, 1.5GiB)")
    ap.add_argument("--max-size", type=parse_bytes, metavar="B",
                    help="largest file; default 4%% of the total, at most 64 MiB, "
                         "at least 4x the mean file size")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default {DEFAULT_SEED}")
    ap.add_argument("--out", type=Path, metavar="DIR", help="output folder (the document root)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--force", action="store_true", help="regenerate even if up to date")
    mode.add_argument("--verify", action="store_true",
                      help="check the set in --out against its MANIFEST (format, every size, "
                           "every byte) and write nothing")
    mode.add_argument("--print-stats", action="store_true",
                      help="print count, total, min/median/mean/p90/p99/max size and tail share "
                           "of the set these arguments describe, and write nothing")
    args = ap.parse_args(argv)

    custom = args.files is not None or args.total_bytes is not None
    if custom and args.preset:
        ap.error("use either --preset or --files with --total-bytes")
    if custom and (args.files is None or args.total_bytes is None):
        ap.error("a custom set needs both --files and --total-bytes")
    if custom:
        args.preset = "custom"
    else:
        args.preset = args.preset or "small"
        args.files = PRESETS[args.preset]["files"]
        args.total_bytes = PRESETS[args.preset]["total_bytes"]
    if args.max_size is None and args.files > 0:
        args.max_size = default_max_size(args.files, args.total_bytes)
    if args.out is None:
        args.out = here / "generated" / args.preset
    return args


def main(argv: list[str]) -> int:
    """Runs the command line; returns the exit status."""
    args = parse_args(argv)
    root = args.out
    say = lambda msg: print(msg, flush=True)  # noqa: E731

    if args.verify:
        problems = verify_set(root)
        for msg in problems[:50]:
            say(f"{root}: {msg}")
        if len(problems) > 50:
            say(f"... and {len(problems) - 50} more")
        if not problems:
            say(f"{root}: ok")
        return 1 if problems else 0

    params = Params(args.preset, args.files, args.total_bytes, args.seed, args.max_size or 0)
    try:
        plan = build_plan(params)
    except UsageError as err:
        print(f"generate.py: {err}", file=sys.stderr)
        return 2
    if args.print_stats:
        for line in stats_lines(plan):
            say(line)
        return 0

    text = render_manifest(plan)
    manifest = root / MANIFEST
    if not args.force and manifest.is_file() and \
            manifest.read_text(encoding="utf-8") == text and \
            sizes_match(root, [(e.path, e.size, e.rank) for e in plan.entries]):
        say(f"{root}: up to date ({params.files} files, {params.total_bytes:,} bytes); nothing to do")
        return 0
    if root.exists() and not root.is_dir():
        print(f"generate.py: {root} is not a folder", file=sys.stderr)
        return 2
    if root.exists() and any(root.iterdir()) and not manifest.exists() and \
            not (root / MANIFEST_PARTIAL).exists():
        print(f"generate.py: {root} is not empty and holds no file set; refusing to write there",
              file=sys.stderr)
        return 2

    start = time.monotonic()
    big = params.total_bytes >= 1_000_000_000
    write_set(plan, root, text, (lambda m: print(m, file=sys.stderr, flush=True)) if big else None)
    took = time.monotonic() - start
    say(f"{root}: wrote {params.files} files, {params.total_bytes:,} bytes in {took:.1f} s "
        f"({params.total_bytes / 1e6 / max(took, 1e-9):,.0f} MB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
