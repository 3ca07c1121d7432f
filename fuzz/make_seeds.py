#!/usr/bin/env python3
"""Builds the seed corpus of one fuzz target (docs/fuzzing.md).

Seeds come from what the repository and the shared samples already hold,
made at run time so nothing large is copied into the repository:
  - fuzz/seeds/TARGET/: small hand-made inputs;
  - samples/: traces and maketrace configurations;
  - ../shared/pcaps/: real captures, as files (capture) and, split into
    client and server payloads with tshark, as decoder inputs;
  - outputs of the bbprof binary under test: traces in both forms and
    compressed, nest and convolve results, an offsets file.
Usage: make_seeds.py --bbprof BIN --target TARGET --out DIR
"""

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PCAPS = os.path.join(os.path.dirname(ROOT), "shared", "pcaps")
SAMPLES = os.path.join(ROOT, "samples")
# Seeds are cut to this size (whole lines for text): the fuzz runs use
# -max_len of this order, and small seeds mutate faster.
MAX_SEED = 16 * 1024

# Which decoder's seeds a shared capture feeds, by the capture's name.
PCAP_DECODERS = {
    "dns_": ["dns"],
    "grpc_": ["http2", "http2_end"],
    "http_": ["http", "generic"],
    "memcached_": ["memcached"],
    "nfs": ["rpc"],
    "rpc_": ["rpc"],
    "postgresql_": ["pg"],
    "redis_": ["redis", "generic"],
}


def run(args, **kw):
    return subprocess.run(args, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, **kw).stdout


def write(out, name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def head_lines(data, limit=MAX_SEED):
    if len(data) <= limit:
        return data
    cut = data.rfind(b"\n", 0, limit)
    return data[:cut + 1] if cut > 0 else data[:limit]


def pcaps():
    if not os.path.isdir(PCAPS):
        return []
    return sorted(os.path.join(PCAPS, n) for n in os.listdir(PCAPS)
                  if ".pcap" in n)


def text_traces(bbprof, tmp):
    """Small text traces: the samples, and captures decoded by bbprof."""
    traces = []
    for name in sorted(os.listdir(SAMPLES)):
        if name.endswith(".trace"):
            with open(os.path.join(SAMPLES, name), "rb") as f:
                traces.append((name, head_lines(f.read())))
    for pcap in pcaps():
        if os.path.getsize(pcap) > 100_000:
            continue
        out = os.path.join(tmp, "c.trace")
        try:
            run([bbprof, "capture", "--quiet", "-r", pcap, "-o", out])
        except subprocess.CalledProcessError:
            continue
        with open(out, "rb") as f:
            traces.append((os.path.basename(pcap) + ".trace",
                           head_lines(f.read())))
    return traces


def convert(bbprof, tmp, data, suffix):
    src = os.path.join(tmp, "in.trace")
    dst = os.path.join(tmp, "out" + suffix)
    with open(src, "wb") as f:
        f.write(data)
    if os.path.exists(dst):
        os.remove(dst)
    run([bbprof, "convert", src, dst])
    with open(dst, "rb") as f:
        return f.read()


def seeds_trace(bbprof, tmp, out, binary):
    for name, data in text_traces(bbprof, tmp):
        if binary:
            write(out, name + ".bbt", convert(bbprof, tmp, data, ".bbt"))
        else:
            write(out, name, data)
        if len(data) <= 4096:
            for suffix in (".gz", ".zst"):
                ext = (".bbt" if binary else ".trace") + suffix
                write(out, name + ext, convert(bbprof, tmp, data, ext))


def seeds_capture(out):
    for pcap in pcaps():
        with open(pcap, "rb") as f:
            data = f.read()
        if pcap.endswith(".gz"):
            # Keep it compressed (the reader undoes it), but short.
            data = gzip.compress(gzip.decompress(data)[:MAX_SEED])
        write(out, os.path.basename(pcap), data[:MAX_SEED])


def flows(pcap):
    """Per TCP/UDP flow, its payloads in capture order as (to_server, ts,
    bytes); the client is the sender of the flow's first packet."""
    fields = run(["tshark", "-r", pcap, "-Y", "tcp.len>0 || udp", "-T",
                  "fields", "-e", "tcp.stream", "-e", "udp.stream", "-e",
                  "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport", "-e",
                  "udp.srcport", "-e", "frame.time_epoch", "-e",
                  "tcp.payload", "-e", "udp.payload"])
    result = {}
    for line in fields.decode().splitlines():
        cols = line.split("\t")
        if len(cols) < 9:
            continue
        key = ("t" + cols[0]) if cols[0] else ("u" + cols[1])
        src = (cols[2] or cols[3], cols[4] or cols[5])
        payload = bytes.fromhex(cols[7] or cols[8])
        if not payload:
            continue
        flow = result.setdefault(key, {"client": src, "packets": []})
        flow["packets"].append((src == flow["client"], float(cols[6]), payload))
    return list(result.values())


def chunks(packets):
    """The decoder target's input format (fuzz/decoder_fuzzer.cc)."""
    data = bytearray()
    last = packets[0][1] if packets else 0
    for to_server, ts, payload in packets:
        ms = max(0, min(63, int((ts - last) * 1000)))
        last = ts
        for i in range(0, len(payload), 65535):
            part = payload[i:i + 65535]
            data.append((ms << 2) | (0 if to_server else 1))
            data += len(part).to_bytes(2, "big") + part
            ms = 0
        if len(data) > MAX_SEED:
            break
    return bytes(data)


def seeds_decoder(out, decoder):
    for pcap in pcaps():
        base = os.path.basename(pcap)
        wanted = [d for prefix, ds in PCAP_DECODERS.items()
                  if base.startswith(prefix) for d in ds]
        if decoder not in wanted:
            continue
        path = pcap
        if pcap.endswith(".gz"):
            path = os.path.join(out, ".unpacked.pcap")
            with gzip.open(pcap) as f, open(path, "wb") as g:
                g.write(f.read())
        try:
            found = flows(path)
        finally:
            if path != pcap:
                os.remove(path)
        for i, flow in enumerate(found[:16]):
            write(out, f"{base}.flow{i}", chunks(flow["packets"]))


def seeds_results(bbprof, tmp, out):
    for name in ("paper_example.trace", "multitier-small.trace"):
        trace = os.path.join(SAMPLES, name)
        for tool, extra in (("nest", []),
                            ("convolve", ["--quantum", "0.001", "--max-delay",
                                          "0.05"])):
            result = os.path.join(tmp, "r.json")
            try:
                run([bbprof, tool, trace, "--quiet", "--json", result] + extra)
            except subprocess.CalledProcessError:
                continue
            with open(result, "rb") as f:
                write(out, f"{tool}-{name}.json", f.read()[:64 * 1024])
    data = os.path.join(ROOT, "tests", "viz", "data")
    if os.path.isdir(data):
        for name in sorted(os.listdir(data)):
            if name.endswith(".json"):
                shutil.copy(os.path.join(data, name), os.path.join(out, name))


def seeds_offsets(bbprof, tmp, out):
    trace = os.path.join(SAMPLES, "paper_example.trace")
    offsets = os.path.join(tmp, "applied.offsets")
    try:
        run([bbprof, "skewer", trace, "--quiet", "--offset", "B=0.030",
             "--drift", "C=-12.5", "--write-offsets", offsets, "-o",
             os.path.join(tmp, "skewed.trace")])
        with open(offsets, "rb") as f:
            write(out, "applied.offsets", f.read())
    except subprocess.CalledProcessError:
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bbprof", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    hand = os.path.join(ROOT, "fuzz", "seeds", a.target)
    if os.path.isdir(hand):
        for name in sorted(os.listdir(hand)):
            shutil.copy(os.path.join(hand, name), os.path.join(a.out, name))
    with tempfile.TemporaryDirectory() as tmp:
        t = a.target
        if t in ("text_trace", "binary_trace"):
            seeds_trace(a.bbprof, tmp, a.out, t == "binary_trace")
        elif t == "capture":
            seeds_capture(a.out)
        elif t.startswith("decoder_"):
            seeds_decoder(a.out, t[len("decoder_"):])
        elif t == "maketrace_config":
            for name in sorted(os.listdir(SAMPLES)):
                if name.endswith(".conf"):
                    shutil.copy(os.path.join(SAMPLES, name),
                                os.path.join(a.out, name))
        elif t in ("result_json", "render", "eval"):
            seeds_results(a.bbprof, tmp, a.out)
        elif t == "offsets":
            seeds_offsets(a.bbprof, tmp, a.out)
        else:
            sys.exit(f"make_seeds.py: unknown target '{t}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
