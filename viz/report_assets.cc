#include "viz/report_assets.h"

namespace bbprof::viz {

const std::string_view kReportCss = R"css(
body{font-family:Helvetica,Arial,sans-serif;font-size:14px;margin:0 24px 48px;color:#222}
h1{font-size:22px;margin:16px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
nav a{margin-right:14px}
table{border-collapse:collapse}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
#pattern-table th{cursor:pointer;user-select:none;background:#f6f6f6;position:sticky;top:0}
#pattern-table th[aria-sort=ascending]::after{content:" \25B2"}
#pattern-table th[aria-sort=descending]::after{content:" \25BC"}
#pattern-table td.sig{max-width:420px;word-break:break-all}
.mark{display:inline-block;background:#fde0dd;color:#7a0177;border-radius:3px;padding:0 4px;margin:1px;font-size:12px}
.warn{background:#fff4e0;border-left:4px solid #f0a020;padding:4px 8px;margin:4px 0}
#filter{width:360px;padding:4px;font-size:14px}
details.pattern{border:1px solid #ddd;border-radius:4px;margin:10px 0;padding:4px 10px}
details.pattern>summary{cursor:pointer;font-weight:bold}
.graph svg{max-width:100%;height:auto}
.pbody{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.pbody>div{flex:1 1 420px;min-width:0}
.charts{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
svg text{font-family:Helvetica,Arial,sans-serif}
.hist,.waterfall,.scale,#phases-chart{font-size:10px}
ul.legend li{margin:2px 0}
.meta{font-family:monospace;font-size:12px;white-space:pre-wrap;word-break:break-all}
)css";

// Sorting: a click on a column header orders the rows by its cells'
// data-v (numbers) or text, a second click reverses. Filtering: every word
// typed must appear in a row's text (signature, ops, culprit, marks); the
// pattern sections below follow the table.
const std::string_view kReportScript = R"js(
(function () {
  'use strict';
  var table = document.getElementById('pattern-table');
  if (!table) return;
  var tbody = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  function key(row, i, numeric) {
    var c = row.cells[i];
    if (numeric) return parseFloat(c.getAttribute('data-v'));
    return c.textContent.toLowerCase();
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    th.addEventListener('click', function () {
      var numeric = th.getAttribute('data-type') === 'num';
      var asc = th.getAttribute('aria-sort') !== 'ascending';
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      var rows = Array.prototype.slice.call(tbody.rows);
      rows.sort(function (a, b) {
        var x = key(a, i, numeric), y = key(b, i, numeric);
        var d = x < y ? -1 : x > y ? 1 : 0;
        if (d === 0) d = key(a, 0, true) - key(b, 0, true);
        return asc ? d : -d;
      });
      rows.forEach(function (r) { tbody.appendChild(r); });
    });
  });
  var filter = document.getElementById('filter');
  var shown = document.getElementById('shown');
  function apply() {
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    var n = 0;
    Array.prototype.forEach.call(tbody.rows, function (r) {
      var text = r.textContent.toLowerCase();
      var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      r.hidden = !ok;
      var section = document.getElementById(r.getAttribute('data-pattern'));
      if (section) section.hidden = !ok;
      if (ok) n++;
    });
    shown.textContent = n + ' of ' + tbody.rows.length + ' patterns';
  }
  filter.addEventListener('input', apply);
  apply();
})();
)js";

}  // namespace bbprof::viz
