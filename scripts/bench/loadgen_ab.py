#!/usr/bin/env python3
"""weft-load A/B: two weft-load binaries against one NGINX (one worker, core 0), each run
pinned to core 1 with the same options, alternated ROUNDS times; prints each run's reply rate
and weft-load's own CPU per reply (from its JSON report), and the median ratio B/A.

Usage: scripts/bench/loadgen_ab.py A_BINARY B_BINARY [ROUNDS] [-- weft-load options]
Default options: --rate 4000 --num-conns 12000 --num-calls 1..5 --timeout 5 (3 s of load).
Targets 127.0.0.1 only; every run is bounded by --num-conns.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "e2e", "loadgen"))
from loadgen_harness import NginxServer  # noqa: E402


def run(binary, port, options, out):
    subprocess.run(["taskset", "-c", "1", binary, "--server", "127.0.0.1", "--port", str(port),
                    "--uri", "/f1k"] + options + ["--quiet", "--json", out], check=True,
                   timeout=120)
    with open(out) as f:
        j = json.load(f)
    replies = j["replies"]["total"]
    cpu = j["cpu"]["user_s"] + j["cpu"]["system_s"]
    return replies / j["test_duration_s"], 1e6 * cpu / max(replies, 1)


def main(argv):
    a, b = argv[1], argv[2]
    rounds = int(argv[3]) if len(argv) > 3 and argv[3] != "--" else 5
    options = argv[argv.index("--") + 1:] if "--" in argv else \
        ["--rate", "4000", "--num-conns", "12000", "--num-calls", "1..5", "--timeout", "5"]
    tmp = tempfile.mkdtemp(prefix="loadgen-ab-")
    os.chmod(tmp, 0o755)
    with open(os.path.join(tmp, "f1k"), "wb") as f:
        f.write(b"x" * 1000)
    nginx = NginxServer(tmp)
    nginx.start()
    ratios = []
    try:
        print("| round | A replies/s | A us CPU/reply | B replies/s | B us CPU/reply |")
        print("|---|---|---|---|---|")
        for r in range(rounds):
            order = [("A", a), ("B", b)] if r % 2 == 0 else [("B", b), ("A", a)]
            got = {}
            for name, binary in order:
                got[name] = run(binary, nginx.port, options, os.path.join(tmp, "r.json"))
            print("| %d | %.0f | %.2f | %.0f | %.2f |" % (r + 1, *got["A"], *got["B"]))
            ratios.append(got["B"][1] / got["A"][1])
    finally:
        nginx.cleanup()
    print("median B/A CPU per reply: %.3f (rounds: %s)"
          % (statistics.median(ratios), ", ".join("%.3f" % x for x in ratios)))


if __name__ == "__main__":
    main(sys.argv)
