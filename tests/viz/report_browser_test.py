#!/usr/bin/env python3
"""Loads bbprof's HTML report in a real headless Chromium (Debian's chromium
package, scripts/install-deps.sh) and checks what a user relies on: the page
loads with no script error, sorting and filtering the pattern table work, and
every pattern's graph is present. Run on a small trace and on a trace of 135
patterns (multitier-parallelism-high). A missing chromium fails the test.

Usage: report_browser_test.py BBPROF SOURCE_DIR"""
import json, os, shutil, subprocess, sys, tempfile

# Runs first (in <head>): every error of the page's own script is recorded.
PROBE = """<script>window.__errors=[];
window.addEventListener('error',function(e){window.__errors.push(String(e.message));});
</script>"""

# Runs after the page's script: exercises the table as a user would and
# writes what it saw into <pre id="bbprof-test-result">.
HARNESS = r"""<script>
window.addEventListener('load', function () {
  var out = {};
  try {
    var table = document.getElementById('pattern-table');
    var body = table.tBodies[0];
    var heads = table.tHead.rows[0].cells;
    function col(name) {
      for (var i = 0; i < heads.length; i++) if (heads[i].textContent === name) return i;
      throw new Error('no column ' + name);
    }
    function values(i) {
      return Array.prototype.map.call(body.rows, function (r) {
        return parseFloat(r.cells[i].getAttribute('data-v'));
      });
    }
    function sorted(a, dir) {
      for (var k = 1; k < a.length; k++) if (dir * (a[k] - a[k - 1]) < 0) return false;
      return true;
    }
    out.rows = body.rows.length;
    var details = document.querySelectorAll('details.pattern');
    out.details = details.length;
    out.graphs = 0;
    Array.prototype.forEach.call(details, function (d) {
      var g = d.querySelector('svg g.graph');
      if (g && g.id === d.id && g.querySelectorAll('g.node').length > 0) out.graphs++;
    });
    out.map_nodes = document.querySelectorAll('#map svg g.node').length;
    out.phase_rows = document.querySelectorAll('#phases-chart a').length;
    var sorts = {};
    ['count', 'total', 'mean', 'p99', 'adds'].forEach(function (name) {
      var i = col(name);
      heads[i].click();
      var asc = sorted(values(i), 1);
      heads[i].click();
      sorts[name] = asc && sorted(values(i), -1);
    });
    var sig = col('pattern');
    heads[sig].click();
    var names = Array.prototype.map.call(body.rows, function (r) { return r.cells[sig].textContent.toLowerCase(); });
    sorts.pattern = names.every(function (v, k) { return k === 0 || names[k - 1] <= v; });
    out.sorts = sorts;
    // Filter by a word found in some rows but not all.
    var filter = document.getElementById('filter');
    var word = null;
    var texts = Array.prototype.map.call(body.rows, function (r) { return r.textContent.toLowerCase(); });
    var sigs = Array.prototype.map.call(body.rows, function (r) { return r.cells[sig].textContent.toLowerCase(); });
    for (var k = 0; k < sigs.length && word === null; k++) {
      var words = sigs[k].split(/[^a-z0-9]+/);
      for (var w = 0; w < words.length; w++) {
        var n = texts.filter(function (t) { return t.indexOf(words[w]) >= 0; }).length;
        if (words[w].length > 1 && n > 0 && n < texts.length) { word = words[w]; break; }
      }
    }
    out.filter_word = word;
    filter.value = word === null ? '' : word.toUpperCase();
    filter.dispatchEvent(new Event('input'));
    var shown = 0, wrong = 0;
    Array.prototype.forEach.call(body.rows, function (r) {
      var has = r.textContent.toLowerCase().indexOf(word) >= 0;
      var section = document.getElementById(r.getAttribute('data-pattern'));
      if (r.hidden === has || section.hidden === has) wrong++;
      if (!r.hidden) shown++;
    });
    out.filter_shown = shown;
    out.filter_wrong = wrong;
    out.shown_text = document.getElementById('shown').textContent;
    filter.value = '';
    filter.dispatchEvent(new Event('input'));
    out.after_clear = Array.prototype.filter.call(body.rows, function (r) { return !r.hidden; }).length;
  } catch (e) {
    window.__errors.push('harness: ' + e);
  }
  out.errors = window.__errors;
  var pre = document.createElement('pre');
  pre.id = 'bbprof-test-result';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr))
    return r.stdout


def check(chromium, report, tmp, expect_patterns):
    page = open(report, encoding="utf-8").read()
    page = page.replace("<head>", "<head>" + PROBE, 1)
    page = page.replace("</body>", HARNESS + "</body>", 1)
    probe = os.path.join(tmp, "probe.html")
    open(probe, "w", encoding="utf-8").write(page)
    dom = run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
               "--user-data-dir=" + os.path.join(tmp, "profile"),
               "--virtual-time-budget=30000", "--dump-dom", "file://" + probe])
    start = dom.find('<pre id="bbprof-test-result">')
    if start < 0:
        return ["no test result in the page (did it load?)"]
    import html
    text = dom[start + len('<pre id="bbprof-test-result">'):dom.find("</pre>", start)]
    out = json.loads(html.unescape(text))
    failures = []
    name = os.path.basename(report)
    if out["errors"]:
        failures.append("%s: script errors: %s" % (name, out["errors"]))
    if out.get("rows") != expect_patterns:
        failures.append("%s: %s table rows, expected %d" % (name, out.get("rows"), expect_patterns))
    if out.get("graphs") != expect_patterns or out.get("details") != expect_patterns:
        failures.append("%s: %s graphs in %s sections, expected %d" %
                        (name, out.get("graphs"), out.get("details"), expect_patterns))
    for col, ok in sorted(out.get("sorts", {}).items()):
        if not ok:
            failures.append("%s: sorting by %s failed" % (name, col))
    if len(out.get("sorts", {})) != 6:
        failures.append("%s: sorts tried: %s" % (name, out.get("sorts")))
    if out.get("filter_word") is None or out.get("filter_wrong") != 0 or \
            not 0 < out.get("filter_shown", 0) < expect_patterns:
        failures.append("%s: filtering failed: %s" % (name, out))
    elif out.get("shown_text") != "%d of %d patterns" % (out["filter_shown"], expect_patterns):
        failures.append("%s: counter says %r" % (name, out.get("shown_text")))
    if out.get("after_clear") != expect_patterns:
        failures.append("%s: clearing the filter shows %s rows" % (name, out.get("after_clear")))
    if not out.get("map_nodes"):
        failures.append("%s: the service map has no nodes" % name)
    if out.get("phase_rows") != expect_patterns:
        failures.append("%s: %s phase rows" % (name, out.get("phase_rows")))
    print("%s: %d patterns, filter %r shows %d, sorts %s" %
          (name, out.get("rows", 0), out.get("filter_word"), out.get("filter_shown", 0),
           "ok" if all(out.get("sorts", {}).values()) else "FAILED"))
    return failures


def main():
    bbprof, src = sys.argv[1], sys.argv[2]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("chromium is not installed (run scripts/install-deps.sh)")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(os.path.join(src, "samples", "multitier-small.trace"), 8)]
        high = os.path.join(tmp, "high.bbt")
        run([bbprof, "maketrace", "-q", os.path.join(src, "samples",
             "multitier-parallelism-high.conf"), "-o", high])
        cases.append((high, None))
        for trace, expect in cases:
            base = os.path.join(tmp, os.path.basename(trace))
            run([bbprof, "nest", "-q", trace, "--json", base + ".json",
                 "--report", base + ".html"])
            n = len(json.load(open(base + ".json"))["patterns"])
            if expect is not None and n != expect:
                failures.append("%s: %d patterns, expected %d" % (trace, n, expect))
            if expect is None and n < 100:
                failures.append("%s: only %d patterns; the large case needs 100+" % (trace, n))
            failures += check(chromium, base + ".html", tmp, n)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
