#!/usr/bin/env python3
"""Tests of www-fixtures/generate.py: determinism, totals, manifest format, tail, re-runs, --verify."""

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "www-fixtures" / "generate.py"

_spec = importlib.util.spec_from_file_location("generate", SCRIPT)
gen = importlib.util.module_from_spec(_spec)
sys.modules["generate"] = gen  # dataclasses look their module up there
_spec.loader.exec_module(gen)

HEADER_RE = re.compile(r"^# weft-fileset v1 preset=(\S+) seed=(\d+) files=(\d+) bytes=(\d+)$")
ENTRY_RE = re.compile(r"^(/[^\t]+)\t(\d+)\t(\d+)$")


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the generator with args; returns the finished process (stdout and stderr as text)."""
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"generate.py {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stdout}{proc.stderr}")
    return proc


def parse_manifest(root: Path) -> tuple[re.Match, list[tuple[str, int, int]]]:
    """Returns the header match and the (path, size, rank) rows of root/MANIFEST, strictly."""
    raw = (root / "MANIFEST").read_bytes()
    lines = raw.decode("utf-8").split("\n")
    assert lines[-1] == "", "MANIFEST ends with a newline"
    header = HEADER_RE.match(lines[0])
    assert header, lines[0]
    rows = []
    for line in lines[1:-1]:
        if line.startswith("#"):
            continue
        m = ENTRY_RE.match(line)
        assert m, repr(line)
        rows.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return header, rows


def tree_digest(root: Path) -> dict[str, str]:
    """Returns {relative path: sha256} for every file under root."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def custom(out: Path, *extra: str, files: int = 300, total: str = "3M") -> None:
    """Generates a small custom set into out."""
    run("--files", str(files), "--total-bytes", total, "--out", str(out), *extra)


class SmallPreset(unittest.TestCase):
    """The CI preset, generated once into a temporary folder and read by every test here."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.tmp.name) / "small"
        run("--preset", "small", "--out", str(cls.root))
        cls.header, cls.rows = parse_manifest(cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_header(self):
        preset, seed, files, total = self.header.groups()
        self.assertEqual((preset, int(seed)), ("small", gen.DEFAULT_SEED))
        self.assertEqual(int(files), len(self.rows))
        self.assertEqual(int(total), sum(size for _, size, _ in self.rows))

    def test_totals_within_band(self):
        target = gen.PRESETS["small"]
        self.assertEqual(len(self.rows), target["files"])
        total = sum(size for _, size, _ in self.rows)
        self.assertLessEqual(abs(total - target["total_bytes"]), 0.10 * target["total_bytes"])
        on_disk = sum(p.stat().st_size for p in self.root.rglob("dir*/*"))
        self.assertEqual(on_disk, total)

    def test_ranks_are_a_permutation_in_order(self):
        self.assertEqual([rank for _, _, rank in self.rows], list(range(1, len(self.rows) + 1)))

    def test_paths_exist_with_their_sizes(self):
        listed = set()
        for path, size, _ in self.rows:
            self.assertRegex(path, r"^/dir\d{5}/class\d+_\d+\.(html|css|js|png|txt)$")
            self.assertEqual((self.root / path[1:]).stat().st_size, size, path)
            listed.add(path[1:])
        files = {str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file()}
        self.assertEqual(files, listed | {"MANIFEST"})

    def test_tree_shape(self):
        for d in self.root.iterdir():
            if d.is_dir():
                self.assertLessEqual(len(list(d.iterdir())), gen.FILES_PER_DIR, d)
        for path, size, _ in self.rows:  # classC is the size decade, as in SPECweb99
            c = int(re.search(r"class(\d+)_", path).group(1))
            self.assertEqual(c, max(0, len(str(size)) - 3), path)

    def test_type_mix(self):
        counts = {}
        for path, _, _ in self.rows:
            ext = path.rsplit(".", 1)[1]
            counts[ext] = counts.get(ext, 0) + 1
        self.assertEqual(counts, {ext: round(share * len(self.rows))
                                  for ext, share in gen.TYPE_MIX})

    def test_heavy_tail(self):
        sizes = sorted((size for _, size, _ in self.rows), reverse=True)
        total, n = sum(sizes), len(sizes)
        top = sum(sizes[: round(0.07 * n)])
        self.assertGreater(top / total, 0.5, "the largest 7% of files hold most bytes")
        median, mean = sizes[n // 2], total / n
        self.assertLess(median, mean / 3)
        self.assertLessEqual(sizes[0], gen.default_max_size(n, total))
        self.assertGreaterEqual(sizes[-1], gen.MIN_SIZE)

    def test_rank_independent_of_size(self):
        # Mean size of the 10% most popular files is not systematically the largest or smallest.
        n = len(self.rows)
        popular = sorted(size for _, size, _ in self.rows[: n // 10])
        everyone = sorted(size for _, size, _ in self.rows)
        self.assertLess(abs(popular[len(popular) // 2] / everyone[n // 2] - 1), 0.5)

    def test_contents_unique_and_self_describing(self):
        digests = tree_digest(self.root)
        del digests["MANIFEST"]
        self.assertEqual(len(set(digests.values())), len(digests))
        for path, size, _ in self.rows[:50]:
            head = (self.root / path[1:]).read_bytes()[:200]
            if path.endswith(".png"):
                self.assertTrue(head.startswith(b"\x89PNG\r\n\x1a\n"), path)
            self.assertIn(f"{path} {size}\n".encode(), head)

    def test_rerun_is_noop(self):
        before = {p: p.stat().st_mtime_ns for p in self.root.rglob("*")}
        proc = run("--preset", "small", "--out", str(self.root))
        self.assertIn("up to date", proc.stdout)
        self.assertEqual(before, {p: p.stat().st_mtime_ns for p in self.root.rglob("*")})

    def test_verify_passes(self):
        proc = run("--verify", "--out", str(self.root))
        self.assertIn("ok", proc.stdout)


class Determinism(unittest.TestCase):
    def test_same_seed_same_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "a", Path(tmp) / "b"
            custom(a, "--seed", "7")
            custom(b, "--seed", "7")
            self.assertEqual((a / "MANIFEST").read_bytes(), (b / "MANIFEST").read_bytes())
            self.assertEqual(tree_digest(a), tree_digest(b))

    def test_different_seed_different_set(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "a", Path(tmp) / "b"
            custom(a, "--seed", "7")
            custom(b, "--seed", "8")
            _, rows_a = parse_manifest(a)
            _, rows_b = parse_manifest(b)
            self.assertNotEqual(rows_a, rows_b)
            self.assertNotEqual([s for _, s, _ in sorted(rows_a)], [s for _, s, _ in sorted(rows_b)])
            self.assertFalse(set(tree_digest(a).values()) & set(tree_digest(b).values()))

    def test_plan_matches_written_set(self):
        params = gen.Params("custom", 300, 3_000_000, 7, gen.default_max_size(300, 3_000_000))
        text = gen.render_manifest(gen.build_plan(params))
        with tempfile.TemporaryDirectory() as tmp:
            custom(Path(tmp), "--seed", "7")
            self.assertEqual((Path(tmp) / "MANIFEST").read_text(encoding="utf-8"), text)


class Regeneration(unittest.TestCase):
    def test_verify_detects_truncation_and_corruption(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            custom(root)
            _, rows = parse_manifest(root)
            cut, flip = rows[0][0], rows[1][0]
            with open(root / cut[1:], "r+b") as f:
                f.truncate(rows[0][1] - 1)
            data = bytearray((root / flip[1:]).read_bytes())
            data[-1] ^= 1
            (root / flip[1:]).write_bytes(data)
            proc = run("--verify", "--out", str(root), check=False)
            self.assertEqual(proc.returncode, 1)
            self.assertIn(f"{cut}: size", proc.stdout)
            self.assertIn(f"{flip}: content differs", proc.stdout)
            # A damaged set is regenerated, not taken as up to date.
            proc = run("--files", "300", "--total-bytes", "3M", "--out", str(root))
            self.assertIn("wrote", proc.stdout)
            self.assertEqual(run("--verify", "--out", str(root)).returncode, 0)

    def test_force_rewrites(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            custom(root)
            self.assertIn("wrote", run("--files", "300", "--total-bytes", "3M", "--out",
                                       str(root), "--force").stdout)

    def test_new_parameters_replace_old_set(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            custom(root, files=300)
            custom(root, files=120, total="1M")
            _, rows = parse_manifest(root)
            files = {"/" + str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
            self.assertEqual(files, {p for p, _, _ in rows} | {"/MANIFEST"})
            self.assertEqual(len({p.parent for p in root.rglob("dir*/*")}), 2)

    def test_refuses_foreign_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "precious.txt").write_text("keep me")
            proc = run("--files", "10", "--total-bytes", "100k", "--out", tmp, check=False)
            self.assertEqual(proc.returncode, 2)
            self.assertEqual(os.listdir(tmp), ["precious.txt"])

    def test_verify_without_set(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(run("--verify", "--out", tmp, check=False).returncode, 1)


class CommandLine(unittest.TestCase):
    def test_help(self):
        self.assertIn("--print-stats", run("--help").stdout)

    def test_print_stats_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "never"
            proc = run("--preset", "thesis", "--print-stats", "--out", str(out))
            for key in ("files", "total bytes", "min", "median", "mean", "p90", "p99", "max",
                        "tail files"):
                self.assertRegex(proc.stdout, rf"(?m)^{key} ")
            self.assertRegex(proc.stdout, r"(?m)^total bytes\s+4,500,000,000 ")
            self.assertFalse(out.exists())

    def test_bad_arguments(self):
        for args in (["--files", "10"],                                 # no --total-bytes
                     ["--preset", "small", "--files", "10", "--total-bytes", "1M"],
                     ["--files", "10", "--total-bytes", "100"],          # below 10 x MIN_SIZE
                     ["--files", "10", "--total-bytes", "1M", "--max-size", "1k"],
                     ["--total-bytes", "lots", "--files", "3"]):
            with self.subTest(args=args):
                self.assertEqual(run(*args, "--print-stats", check=False).returncode, 2)


class Units(unittest.TestCase):
    def test_parse_bytes(self):
        for text, want in (("123", 123), ("50M", 50_000_000), ("4.5G", 4_500_000_000),
                           ("64MiB", 64 << 20), ("1k", 1000), ("2KiB", 2048)):
            with self.subTest(text=text):
                self.assertEqual(gen.parse_bytes(text), want)

    def test_type_counts_sum(self):
        for n in (1, 7, 99, 2000, 30001):
            self.assertEqual(sum(c for _, c in gen.type_counts(n)), n)

    def test_fit_sizes_exact_and_clamped(self):
        raw = [x for x, _ in gen.draw_raw_sizes(1000, gen.stream(1, "sizes"))]
        for total, cap in ((1_000_000, 50_000), (200_000_000, 4_000_000), (128_000, 128)):
            with self.subTest(total=total):
                sizes, _ = gen.fit_sizes(raw, total, cap)
                self.assertEqual(sum(sizes), total)
                self.assertTrue(all(gen.MIN_SIZE <= s <= cap for s in sizes))

    def test_tail_draws_above_k(self):
        draws = gen.draw_raw_sizes(5000, gen.stream(3, "sizes"))
        self.assertTrue(all((x >= gen.TAIL_K) == tail for x, tail in draws))
        share = sum(tail for _, tail in draws) / len(draws)
        self.assertLess(abs(share - gen.TAIL_PROBABILITY), 0.02)


if __name__ == "__main__":
    unittest.main()
