#!/usr/bin/env python3
"""Renders every fixture to SVG with the bbprof binary and checks that each SVG
really parses as XML and carries every node name and label (special
characters included). Usage: check_svg.py BBPROF DATA_DIR"""
import json, os, subprocess, sys, tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def texts(path):
    root = ET.parse(path).getroot()  # raises on malformed XML
    assert root.tag == SVG + "svg", root.tag
    return [t.text or "" for t in root.iter(SVG + "text")]


def node_names(node):
    yield node["node"]
    for c in node.get("children", []):
        yield from node_names(c)


def main():
    bbprof, data = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in ("nest", "special", "empty", "convolve"):
            src = os.path.join(data, fixture + ".json")
            doc = json.load(open(src, encoding="utf-8"))
            for one_page in (False, True):
                out = os.path.join(tmp, fixture + ("-page" if one_page else ""))
                cmd = [bbprof, "render", src, "-o", out, "-q"] + (["--one-page"] if one_page else [])
                subprocess.run(cmd, check=True)
                all_text = []
                for name in sorted(os.listdir(out)):
                    if name.endswith(".svg"):
                        all_text += texts(os.path.join(out, name))
                joined = "\n".join(all_text)
                wanted = []
                if doc["tool"] == "bbprof nest":
                    for p in doc["patterns"]:
                        wanted.append(p["root"]["caller"])
                        wanted += list(node_names(p["root"]))
                        wanted.append("%d calls" % p["count"])
                    if not doc["patterns"]:
                        wanted.append("no patterns")
                else:
                    wanted += [v["node"] for v in doc["vertices"]]
                    wanted += ["%d msgs" % e["count"] for e in doc["edges"]]
                for w in wanted:
                    if w not in all_text and w not in joined:
                        failures.append("%s%s: %r not among SVG texts" %
                                        (fixture, " (one page)" if one_page else "", w))
    # The special-character names must appear exactly, not entity-mangled.
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
