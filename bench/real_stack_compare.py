#!/usr/bin/env python3
"""Two or more nest builds on the captures of a real-stack bench run, in one run.

    bench/real_stack_compare.py WORKDIR NAME=BINARY[?VAR=VALUE&...] ...

WORKDIR holds the captures `bench/real_stack_accuracy.sh WORKDIR` kept
(NAME.trace per level). Each capture is scored as taken ("one"), with the
bench's skew ("bench": SKEW in tests/e2e/real_stack.py, offsets 50 us to
2 ms and drift), that copy with its timestamps cut to 1 ms ("bench+1ms":
QUANTUM), with small offsets ("small": SKEW_SMALL, 50-200 us) and
with those halved ("half", 25-100 us): default `nest` of every build, then
`bbprof eval` (request accuracy). The skewed copies are written next to the
captures once (WORKDIR/compare/). Prints, per set, a table with a column per
build and, for each build after the first, its sum of differences against
the first and its worst trace. VAR=VALUE pairs set environment variables
for that build's runs (say, a switch an experimental build reads).
Runs two at a time (the machine's two cores).
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from real_stack import MIXES, SKEW, SKEW_SMALL, quantize  # noqa: E402

SETS = {
    "one": None,
    "bench": SKEW,
    "bench+1ms": SKEW,  # then quantised
    "small": SKEW_SMALL,
    "half": {k: (o / 2, d) for k, (o, d) in SKEW_SMALL.items()},
}
LEVELS = ["%s-%d" % (m, l) for m in MIXES for l in (10, 30, 60, 85)]


def nodes_of(trace):
    present = set()
    with open(trace) as f:
        for line in f:
            if not line.startswith("#"):
                present.update(line.split("\t")[2:4])
    return present


def skewed_copy(bbprof, trace, offsets, out):
    if os.path.exists(out):
        return out
    argv = [bbprof, "skewer", trace, "-q", "-o", out]
    present = nodes_of(trace)
    for node, (offset, drift) in offsets.items():
        if node in present:
            argv += ["--offset", "%s=%.7f" % (node, offset)]
            if drift:
                argv += ["--drift", "%s=%d" % (node, drift)]
    subprocess.run(argv, check=True, capture_output=True)
    return out


def accuracy(build, trace):
    """Default nest of `build` (binary, environment), then eval."""
    binary, env = build
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "r.json")
        subprocess.run([binary, "nest", trace, "-q", "--json", result, "--requests",
                        os.path.join(tmp, "r.otlp.json")],
                       check=True, capture_output=True, env=env)
        scored = os.path.join(tmp, "e.json")
        subprocess.run([binary, "eval", result, "--truth", trace, "-q", "--json", scored],
                       check=True, capture_output=True, env=env)
        with open(scored) as f:
            return 100 * json.load(f)["request_accuracy"]


def parse_build(arg):
    name, _, spec = arg.partition("=")
    binary, _, assignments = spec.partition("?")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BBPROF_")}
    for kv in filter(None, assignments.split("&")):
        k, _, v = kv.partition("=")
        env[k] = v
    return name, (os.path.abspath(binary), env)


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    work = sys.argv[1]
    builds = [parse_build(a) for a in sys.argv[2:]]
    levels = [l for l in LEVELS if os.path.exists(os.path.join(work, l + ".trace"))]
    if not levels:
        print("%s holds no capture of a bench run (NAME.trace)" % work, file=sys.stderr)
        return 1
    os.makedirs(os.path.join(work, "compare"), exist_ok=True)
    first = builds[0][1][0]
    traces = {}
    for kind, offsets in SETS.items():
        for level in levels:
            trace = os.path.join(work, level + ".trace")
            if offsets is not None:
                name = kind.split("+")[0]
                trace = skewed_copy(first, trace, offsets,
                                    os.path.join(work, "compare", "%s.%s.trace" % (level, name)))
            if kind.endswith("+1ms"):
                trace = quantize(first, trace)
            traces[kind, level] = trace
    jobs = [(name, kind, level) for name, _ in builds for (kind, level) in traces]
    build_of = dict(builds)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        scores = dict(zip(jobs, pool.map(
            lambda j: accuracy(build_of[j[0]], traces[j[1], j[2]]), jobs)))
    names = [name for name, _ in builds]
    for kind in SETS:
        print("## %s" % kind)
        print("| trace | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for level in levels:
            print("| %s | " % level + " | ".join(
                "%.2f" % scores[n, kind, level] for n in names) + " |")
        for n in names[1:]:
            d = [scores[n, kind, l] - scores[names[0], kind, l] for l in levels]
            print("%s - %s: sum %+.2f, worst %+.2f" % (n, names[0], sum(d), min(d)))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
