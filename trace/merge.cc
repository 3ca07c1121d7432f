#include "trace/merge.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "base/atomic_file.h"
#include "trace/node_table.h"
#include "trace/reader.h"

namespace bbprof::trace {

namespace {

// One input: either a live reader, or (with --sort) its records sorted in
// memory. The current record's strings are owned here, since a reader's
// views die on its next Next().
struct Input {
  std::unique_ptr<TraceReader> reader;
  struct Owned {
    TimeNs ts;
    NodeId sender, receiver;
    Kind kind;
    std::string callid, pathid, op;
  };
  bool in_memory = false;  // --sort: records come from `sorted`
  std::vector<Owned> sorted;
  size_t pos = 0;
  Owned cur;
  size_t meta_done = 0;
  std::function<TimeNs(TimeNs)> clock;  // MergeOptions::input_clock

  TimeNs Clocked(TimeNs ts) const { return clock ? clock(ts) : ts; }

  bool Advance() {
    if (in_memory) {
      if (pos >= sorted.size()) return false;
      cur = std::move(sorted[pos++]);
      return true;
    }
    Record r;
    if (!reader->Next(r)) return false;
    cur = {Clocked(r.ts_ns), r.sender, r.receiver, r.kind,
           std::string(r.callid), std::string(r.pathid), std::string(r.op)};
    return true;
  }
};

}  // namespace

Result<std::map<std::string, std::string>> LoadRenameMap(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  std::map<std::string, std::string> out;
  std::istringstream in(*text);
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    std::istringstream words(line);
    std::string from, to, extra;
    if (!(words >> from) || from[0] == '#') continue;
    if (!(words >> to) || ((words >> extra) && extra[0] != '#')) {
      return Status::Error(path + ":" + std::to_string(no) +
                           ": expected two names, 'OLD NEW'");
    }
    std::string why = CheckNodeName(to);
    if (!why.empty()) return Status::Error(path + ":" + std::to_string(no) + ": " + why);
    if (!out.emplace(from, to).second) {
      return Status::Error(path + ":" + std::to_string(no) + ": '" + from +
                           "' is renamed twice");
    }
  }
  return out;
}

Result<MergeSummary> MergeTraces(const std::vector<std::string>& inputs,
                                 const std::string& output,
                                 const MergeOptions& options) {
  auto nodes = std::make_shared<NodeTable>();
  std::vector<Input> in(inputs.size());
  ReaderOptions ropts;
  ropts.allow_unsorted = options.sort_inputs;
  MergeSummary summary;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto r = options.open ? options.open(inputs[i], nodes, ropts)
                          : OpenTraceReader(inputs[i], nodes, ropts);
    if (!r.ok()) return r.status();
    in[i].reader = std::move(*r);
    if (i < options.input_clock.size()) in[i].clock = options.input_clock[i];
  }
  if (options.sort_inputs) {
    // Sorting needs every record in memory (about 64 bytes a message plus
    // its strings).
    for (size_t i = 0; i < inputs.size(); ++i) {
      in[i].in_memory = true;
      Record rec;
      while (in[i].reader->Next(rec)) {
        in[i].sorted.push_back({in[i].Clocked(rec.ts_ns), rec.sender, rec.receiver, rec.kind,
                                std::string(rec.callid), std::string(rec.pathid),
                                std::string(rec.op)});
      }
      if (!in[i].reader->status().ok()) return in[i].reader->status();
      std::stable_sort(in[i].sorted.begin(), in[i].sorted.end(),
                       [](const Input::Owned& a, const Input::Owned& b) { return a.ts < b.ts; });
    }
  }

  // Output names: renamed where the map says, interned in a table of their own.
  NodeTable out_nodes;
  std::vector<NodeId> out_id;
  auto map_node = [&](NodeId id) {
    while (out_id.size() <= id) {
      std::string_view name = nodes->Name(static_cast<NodeId>(out_id.size()));
      auto it = options.rename.find(std::string(name));
      out_id.push_back(out_nodes.Intern(it == options.rename.end() ? name : it->second));
    }
    return out_id[id];
  };
  auto writer = OpenTraceWriter(output, &out_nodes, options.format);
  if (!writer.ok()) return writer.status();
  TraceWriter& w = **writer;
  auto copy_meta = [&](size_t i) -> Status {
    const auto& meta = in[i].reader->meta();
    for (; in[i].meta_done < meta.size(); ++in[i].meta_done) {
      BBPROF_RETURN_IF_ERROR(w.WriteMeta("input=" + inputs[i] + " " + meta[in[i].meta_done]));
    }
    return Status::Ok();
  };
  {
    std::ostringstream m;
    m << "merged=" << inputs.size() << " dedup_window_ns=" << options.dedup_window;
    BBPROF_RETURN_IF_ERROR(w.WriteMeta(m.str()));
    for (const auto& extra : options.extra_meta) BBPROF_RETURN_IF_ERROR(w.WriteMeta(extra));
  }

  using Entry = std::pair<TimeNs, size_t>;  // min-heap on (ts, input)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].Advance()) heap.emplace(in[i].cur.ts, i);
    if (!in[i].reader->status().ok()) return in[i].reader->status();
    BBPROF_RETURN_IF_ERROR(copy_meta(i));
  }
  // Recently written messages for duplicate detection: key -> (ts, input).
  struct Seen {
    TimeNs ts;
    size_t input;
  };
  std::unordered_map<std::string, Seen> seen;
  std::deque<std::pair<TimeNs, std::string>> seen_order;
  std::string key;
  while (!heap.empty()) {
    auto [ts, i] = heap.top();
    heap.pop();
    Input& src = in[i];
    ++summary.read;
    const auto& c = src.cur;
    while (!seen_order.empty() && seen_order.front().first < ts - options.dedup_window) {
      auto it = seen.find(seen_order.front().second);
      if (it != seen.end() && it->second.ts == seen_order.front().first) seen.erase(it);
      seen_order.pop_front();
    }
    key.assign(1, static_cast<char>(c.kind));
    key.append(reinterpret_cast<const char*>(&c.sender), sizeof c.sender);
    key.append(reinterpret_cast<const char*>(&c.receiver), sizeof c.receiver);
    key.append(c.callid);
    bool duplicate = false;
    if (options.dedup_window >= 0) {
      auto it = seen.find(key);
      if (it != seen.end() && it->second.input != i && ts - it->second.ts <= options.dedup_window) {
        duplicate = true;
      } else {
        seen[key] = {ts, i};
        seen_order.emplace_back(ts, key);
      }
    }
    if (duplicate) {
      ++summary.duplicates;
    } else {
      Record out;
      out.ts_ns = c.ts;
      out.kind = c.kind;
      out.sender = map_node(c.sender);
      out.receiver = map_node(c.receiver);
      out.callid = c.callid;
      out.pathid = c.pathid;
      out.op = c.op;
      BBPROF_RETURN_IF_ERROR(w.Write(out));
      ++summary.written;
    }
    if (src.Advance()) heap.emplace(src.cur.ts, i);
    if (src.reader && !src.reader->status().ok()) return src.reader->status();
    BBPROF_RETURN_IF_ERROR(copy_meta(i));
  }
  BBPROF_RETURN_IF_ERROR(w.Close());
  return summary;
}

}  // namespace bbprof::trace
