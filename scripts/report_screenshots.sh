#!/usr/bin/env bash
# Takes the report screenshots of docs/img/ with Debian's headless chromium:
# the demo's trace (samples/multitier-added-delay.conf, seed 1), nested and
# ranked by total latency, its report cut into views (the top of the page,
# one pattern's section, the phases); and the diff view of
# multitier-normal against it (seed 1 both). Usage:
# scripts/report_screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BBPROF="$(pwd)/build/release/cli/bbprof"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$BBPROF" maketrace -q samples/multitier-added-delay.conf -o "$TMP/multitier.trace" --seed 1
# From inside the folder, so the page names the trace as the demo does.
(cd "$TMP" && "$BBPROF" nest -q multitier.trace --sort total-latency --json result.json >/dev/null)
"$BBPROF" report -q "$TMP/result.json" -o "$TMP/report.html"
# A view: the page with only the sections named kept (same style and script).
python3 - "$TMP" <<'PY'
import re, sys
tmp = sys.argv[1]
page = open(tmp + "/report.html", encoding="utf-8").read()
head, rest = page.split('<section id="input">', 1)
body_end = rest.index("\n<script>")
sections = re.findall(r'<section id="([a-z]+)">', '<section id="input">' + rest[:body_end])
def keep(names, out):
    parts = ('<section id="input">' + rest[:body_end]).split("<section ")
    kept = [p for p in parts[1:] if re.match(r'id="(%s)"' % "|".join(names), p)]
    open(out, "w", encoding="utf-8").write(
        head + "".join("<section " + p for p in kept) + rest[body_end:])
keep(["details"], tmp + "/pattern.html")
keep(["phases"], tmp + "/phases.html")
PY
shot() {  # NAME WIDTH,HEIGHT PAGE
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$TMP/profile" --window-size="$2" \
    --screenshot="docs/img/$1.png" "file://$3" >/dev/null 2>&1
}
shot report-overview 1200,1500 "$TMP/report.html"
shot report-pattern 1200,1000 "$TMP/pattern.html"
shot report-phases 1200,420 "$TMP/phases.html"
"$BBPROF" maketrace -q samples/multitier-normal.conf -o "$TMP/normal.trace" --seed 1
"$BBPROF" diff -q "$TMP/normal.trace" "$TMP/multitier.trace" --top 2 --html "$TMP/diff.html" >/dev/null
shot diff-view 1200,1100 "$TMP/diff.html"
ls -l docs/img/report-*.png docs/img/diff-*.png
