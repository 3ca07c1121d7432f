#!/usr/bin/env python3
"""Robustness of the nesting algorithm, as the paper's Figures 19-21 (7.5.2-7.5.4).

From each maketrace configuration (default: the four pathological cases of
section 7.5.2 and samples/multitier-normal.conf) this derives three families
of traces, runs `bbprof nest` at default parameters on each and scores it with
`bbprof eval` against the ground truth:

  parallelism  every tracelet's instance count (parallel clients) times K,
               K = 0.5 1 2 4 8 16 32 (Figure 19);
  variation    every delay's and processing time's standard deviation (the
               part after the ±) times K, K = 0.25 0.5 1 2 4 8 (Figure 20);
  loss         each message lost independently with probability P,
               P = 0 0.1% 0.2% 0.5% 1% 2% 5% (Figure 21; `loss P` in the config);
  low corner   half the clients and half or a quarter of the SDs (the
               "low parallelism and low delay variance" of section 7.5.2).

Every trace has the same length in messages (--messages, default 200000) and
the same seed, so the rows differ only in the varied parameter. Prints one
Markdown table per family: the measured mean parallelism (candidates per
nested call), instance false negatives, messages not on a correct path, and
the top-5 false-negative rate. Not a test.

    bench/nest_robustness.py [--bbprof B] [--config C]... [--messages N] [--seed S] [--work DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def scale_instances(text, k):
    return re.sub(r"instances=(\d+)",
                  lambda m: "instances=%d" % max(1, round(int(m.group(1)) * k)), text)


def scale_sd(text, k):
    def one(m):
        return "±%g%s" % (float(m.group(1)) * k, m.group(2))
    return re.sub(r"±([0-9.]+)(us|ms|s)\b", one, text)


def with_loss(text, p):
    lines = [l for l in text.splitlines() if not re.match(r"\s*loss\s", l)]
    if p > 0:
        lines.append("loss %g" % p)
    return "\n".join(lines) + "\n"


def run(args, cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    return r.stdout


def measure(args, name, text):
    conf = os.path.join(args.work, name + ".conf")
    with open(conf, "w") as f:
        f.write(text)
    trace = os.path.join(args.work, name + ".bbt")
    result = os.path.join(args.work, name + ".json")
    score = os.path.join(args.work, name + ".eval.json")
    run(args, [args.bbprof, "maketrace", conf, "-o", trace, "-q",
               "--messages", str(args.messages), "--seed", str(args.seed)])
    run(args, [args.bbprof, "nest", trace, "-q", "--json", result,
               "--requests", os.path.join(args.work, name + ".otlp.json")])
    run(args, [args.bbprof, "eval", result, "--truth", trace, "-q", "--json", score])
    with open(result) as f:
        r = json.load(f)
    with open(score) as f:
        e = json.load(f)
    curve = e["top_n"]["curve"]
    top5 = next((c for c in curve if c.get("n") == 5), None)
    return {
        "parallelism": r["input"]["mean_parallelism"],
        "fn": e["instances"]["false_negative_rate"],
        "msg_err": e["messages"]["error_rate"],
        "top5": None if top5 is None else top5.get("false_negatives"),
        "unmatched": r["input"]["unmatched_calls"] + r["input"]["unmatched_returns"],
    }


def table(title, label, rows):
    print("#### " + title)
    print()
    print("| %s | mean parallelism | instance FN | messages not on a correct path | top-5 FN | unmatched calls+returns |" % label)
    print("|---|---|---|---|---|---|")
    for value, m in rows:
        print("| %s | %.2f | %.2f%% | %.2f%% | %s | %d |" % (
            value, m["parallelism"], 100 * m["fn"], 100 * m["msg_err"],
            "-" if m["top5"] is None else "%d/5" % m["top5"], m["unmatched"]))
    print()
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bbprof", default=os.environ.get(
        "BBPROF", os.path.join(ROOT, "build/release/cli/bbprof")))
    ap.add_argument("--config", action="append", default=None,
                    help="a maketrace configuration (repeatable)")
    ap.add_argument("--messages", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    if args.work is None:
        args.work = tempfile.mkdtemp(prefix="nest-robustness.")
    os.makedirs(args.work, exist_ok=True)
    configs = args.config or [
        os.path.join(ROOT, "samples", n + ".conf")
        for n in ("children-parallel", "children-0-2", "children-d-cc",
                  "penalty-breaker", "multitier-normal")]
    for config in configs:
        with open(config) as f:
            base = f.read()
        name = os.path.splitext(os.path.basename(config))[0]
        print("### %s (%d messages, seed %d)\n" % (name, args.messages, args.seed))
        table("Parallelism (Figure 19): instances times K", "K",
              [(k, measure(args, "%s-par%g" % (name, k), scale_instances(base, k)))
               for k in (0.5, 1, 2, 4, 8, 16, 32)])
        table("Delay variation (Figure 20): standard deviations times K", "K",
              [(k, measure(args, "%s-var%g" % (name, k), scale_sd(base, k)))
               for k in (0.25, 0.5, 1, 2, 4, 8)])
        table("The low corner: half the parallel clients and smaller standard deviations",
              "clients x, SD x",
              [("%g, %g" % (kp, kv),
                measure(args, "%s-low%g-%g" % (name, kp, kv),
                        scale_sd(scale_instances(base, kp), kv)))
               for kp, kv in ((0.5, 0.5), (0.5, 0.25))])
        table("Message loss (Figure 21): each message lost with probability P", "P",
              [("%g%%" % (100 * p), measure(args, "%s-loss%g" % (name, p), with_loss(base, p)))
               for p in (0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05)])


if __name__ == "__main__":
    main()
