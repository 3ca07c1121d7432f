// The streaming path search (FindPathsStreaming, path_graph.h) and the
// choice between it and the in-memory one (Convolve).
//
// Why it can stream (section 5.2): every step of Figure 6 relates messages
// at most max delay + tolerance apart.  The correlation C(d) of a vertex
// only pairs bins within D quanta; a message from j is caused (5.2.2) by a
// message into j between max delay + v before it and v after it.  So the
// vertex a message belongs to -- which chain of claims brought it there --
// is decided by the messages around it, and the search can be run one level
// of the path tree at a time, each level a walk through the trace in
// windows, holding only a window and its margins.
//
// What is held across a pass is per vertex, not per message: a correlation
// array (2D+1 doubles) or a cost estimate, the claims' counts and summed
// delays per destination and spike, and the position where the next
// overlap-save block may start.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>

#include "convolution/path_graph.h"
#include "convolution/search_steps.h"

namespace bbprof::convolution {

namespace {

using trace::NodeId;
using trace::TimeNs;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b) < 0 ? 1 : 0); }

struct Msg {
  TimeNs ts;
  NodeId from, to;
};

// The messages of the current window and its margins, oldest first: a
// vector consumed from the front and compacted now and then (cheaper than a
// deque for 16-byte records pushed one by one).
class MsgQueue {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  const Msg& front() const { return v_[head_]; }
  const Msg& back() const { return v_.back(); }
  void push_back(const Msg& m) { v_.push_back(m); }
  void pop_front() {
    if (++head_ >= 4096 && 2 * head_ >= v_.size()) {
      v_.erase(v_.begin(), v_.begin() + static_cast<ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  std::span<const Msg> all() const {
    return std::span<const Msg>(v_).subspan(head_);
  }

 private:
  std::vector<Msg> v_;
  size_t head_ = 0;
};

// The messages of the trace as the search needs them (time, sender,
// receiver: 16 bytes each) in an unlinked temporary file, written during the
// first read and read back by every later pass, so that an input that is
// slow to decode (text, compressed, a capture) or cannot be read twice
// (standard input) is decoded once.  The file lives on disk; the process
// holds one buffer of it.
class Spool {
 public:
  Spool() = default;
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;
  ~Spool() {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Create() {
    const char* env = std::getenv("TMPDIR");
    dir_ = env != nullptr && *env != '\0' ? env : "/tmp";
    std::string tmpl = dir_ + "/bbprof-convolve-XXXXXX";
    fd_ = ::mkstemp(tmpl.data());
    if (fd_ < 0) return Error("cannot create a spool file");
    ::unlink(tmpl.c_str());
    buf_.reserve(kBatch);
    return Status::Ok();
  }
  Status Append(const Msg& m) {
    buf_.push_back(m);
    return buf_.size() == kBatch ? Flush() : Status::Ok();
  }
  Status Flush() {
    const char* p = reinterpret_cast<const char*>(buf_.data());
    size_t left = buf_.size() * sizeof(Msg);
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error("cannot write the spool file");
      p += n;
      left -= static_cast<size_t>(n);
    }
    buf_.clear();
    return Status::Ok();
  }
  Status Rewind() {
    if (::lseek(fd_, 0, SEEK_SET) != 0)
      return Error("cannot rewind the spool file");
    buf_.clear();
    pos_ = 0;
    return Status::Ok();
  }
  // The next message, or false at the end (or on an error: see status).
  bool Next(Msg& m) {
    if (pos_ == buf_.size()) {
      buf_.resize(kBatch);
      size_t got = 0;
      char* p = reinterpret_cast<char*>(buf_.data());
      while (got < kBatch * sizeof(Msg)) {
        const ssize_t n = ::read(fd_, p + got, kBatch * sizeof(Msg) - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          status_ = Error("cannot read the spool file");
          break;
        }
        if (n == 0) break;
        got += static_cast<size_t>(n);
      }
      buf_.resize(got / sizeof(Msg));
      pos_ = 0;
      if (buf_.empty()) return false;
    }
    m = buf_[pos_++];
    return true;
  }
  const Status& status() const { return status_; }

 private:
  static constexpr size_t kBatch = 1 << 16;
  Status Error(const std::string& what) const {
    return Status::Error(what + " in " + dir_ + " (" + std::strerror(errno) +
                         "); set TMPDIR to a writable folder, or use "
                         "--search memory");
  }
  int fd_ = -1;
  std::string dir_;
  std::vector<Msg> buf_;
  size_t pos_ = 0;
  Status status_;
};

// Correlator::ChooseMethod's inputs, counted a bin of a at a time, in time
// order (the same figures Correlator::Correlate computes for kAuto).
struct Cost {
  uint64_t pairs = 0, blocks = 0;
  int64_t end = 0;  // the next block starts at the first bin >= end
  void AddBin(const Bin& x, std::span<const Bin> b, size_t& lo, size_t& hi,
              int64_t lag, int64_t block) {
    while (lo < b.size() && b[lo].index < x.index - lag) ++lo;
    if (hi < lo) hi = lo;
    while (hi < b.size() && b[hi].index <= x.index + lag) ++hi;
    pairs += hi - lo;
    if (blocks == 0 || x.index >= end) {
      ++blocks;
      end = x.index + block;
    }
  }
};

// The messages one vertex's spikes claimed for one destination: what the
// edge to it would carry, and the cost of that child's correlation.
struct Candidate {
  internal::CausedGroup caused;  // messages in owned windows only
  Cost cost;
  std::vector<TimeNs> w;  // claimed times within the current window
};

// A vertex of the path tree.  Built breadth first; numbered depth first at
// the end, as the in-memory search numbers them.
struct Task {
  int parent = -1;
  NodeId node = 0;
  int level = 0;         // hops from the root
  uint64_t count = 0;    // |V|: messages into node on this path
  double inherited = 0;  // of them, expected other instances' (ChanceMembers)
  bool widened = false;  // a window before node on the path was widened
  std::vector<DelaySpike> delays;  // of the edge into this vertex
  bool correlates = false;
  Cost cost;
  CorrelationMethod method = CorrelationMethod::kSparse;
  std::vector<internal::MatchWindow> windows;    // claim order
  std::vector<std::pair<NodeId, int>> children;  // (destination, task)
  // Per pass:
  std::vector<TimeNs> v;  // V within the current window
  std::vector<double> corr;
  int64_t fft_next = std::numeric_limits<int64_t>::min();
  std::map<NodeId, Candidate> candidates;

  int Child(NodeId k) const {
    auto it = std::lower_bound(
        children.begin(), children.end(), k,
        [](const std::pair<NodeId, int>& c, NodeId n) { return c.first < n; });
    return it != children.end() && it->first == k ? it->second : -1;
  }
};

class StreamSearch {
 public:
  StreamSearch(const ReaderFactory& open, const Params& p,
               const StreamOptions& o)
      : open_(open),
        p_(p),
        o_(o),
        lag_(internal::LagQuanta(p)),
        block_(Correlator::BlockLength(lag_)),
        // How far claims look either way, in quanta: spread-aware windows
        // lie within [-mu, (D + 1) mu] (MatchWindows), as d +- one quantum.
        tol_q_(p.spread_windows
                   ? 1
                   : (p.tolerance_ns + p.quantum_ns - 1) / p.quantum_ns) {}

  Result<StreamResult> Run() {
    if (Status s = Scan(); !s.ok()) return s;
    auto roots = internal::ChooseRoots(sum_, p_);
    if (!roots.ok()) return roots.status();
    for (NodeId r : *roots) {
      const int ri = NewTask(-1, r, 0);
      for (const auto& [j, n] : sum_.sent_to[r]) {
        if (n < p_.min_count) {
          ++graph_.suppressed_rare;
          continue;
        }
        const int t = NewTask(ri, j, n);
        tasks_[t].delays = {{0.0, n}};
      }
    }
    // Level 1's correlation costs; deeper levels get theirs with the claims
    // that create them.
    std::vector<int> level = AtLevel(1, /*correlating=*/true);
    if (!level.empty()) {
      if (Status s = Pass(Step::kCost, level, 1); !s.ok()) return s;
      for (int t : level) ChooseMethod(tasks_[t]);
    }
    for (int l = 1;; ++l) {
      level = AtLevel(l, true);
      if (level.empty()) break;
      // Correlations, as many arrays at once as the budget allows.
      const uint64_t bytes =
          sizeof(double) * static_cast<uint64_t>(2 * lag_ + 1);
      const size_t batch = std::max<uint64_t>(
          1, o_.correlation_bytes / std::max<uint64_t>(1, bytes));
      for (size_t b = 0; b < level.size(); b += batch) {
        const std::vector<int> part(
            level.begin() + static_cast<ptrdiff_t>(b),
            level.begin() +
                static_cast<ptrdiff_t>(std::min(level.size(), b + batch)));
        for (int t : part) tasks_[t].corr.assign(2 * lag_ + 1, 0.0);
        if (Status s = Pass(Step::kCorrelate, part, l); !s.ok()) return s;
        for (int t : part) {
          Task& x = tasks_[t];
          const std::vector<Spike> spikes =
              internal::CausalSpikes(x.corr, lag_, p_.spikes);
          x.windows = internal::MatchWindows(x.corr, lag_, spikes, p_);
          graph_.widest_tolerance_ns = std::max(
              graph_.widest_tolerance_ns, internal::WidestTolerance(x.windows));
          std::vector<double>().swap(x.corr);
          ++graph_.correlations;
        }
      }
      // Claims (5.2.2), which make level l+1.
      std::vector<int> claiming;
      for (int t : level)
        if (!tasks_[t].windows.empty()) claiming.push_back(t);
      if (claiming.empty()) break;
      if (Status s = Pass(Step::kClaim, claiming, l + 1); !s.ok()) return s;
      for (int t : claiming) MakeChildren(t);
    }
    return Finish();
  }

 private:
  enum class Step { kCost, kCorrelate, kClaim };

  int NewTask(int parent, NodeId node, uint64_t count) {
    Task t;
    t.parent = parent;
    t.node = node;
    t.level = parent < 0 ? 0 : tasks_[parent].level + 1;
    t.count = count;
    t.correlates =
        t.level >= 1 && t.level < p_.max_depth && sum_.sent[node] > 0;
    tasks_.push_back(std::move(t));
    const int id = static_cast<int>(tasks_.size()) - 1;
    if (parent >= 0) tasks_[parent].children.emplace_back(node, id);
    return id;
  }

  std::vector<int> AtLevel(int level, bool correlating) const {
    std::vector<int> out;
    for (size_t t = 0; t < tasks_.size(); ++t) {
      if (tasks_[t].level == level && (!correlating || tasks_[t].correlates))
        out.push_back(static_cast<int>(t));
    }
    return out;
  }

  void ChooseMethod(Task& x) {
    // Correlator::Correlate's kAuto choice, from the same figures.
    x.fft_next = std::numeric_limits<int64_t>::min();
    const CorrelationMethod m =
        Correlator::ChooseMethod(x.cost.pairs, x.cost.blocks, lag_);
    if (m == CorrelationMethod::kSparse) {
      ++graph_.sparse_correlations;
    } else {
      ++graph_.fft_correlations;
    }
    x.method = m;
  }

  // Level-l+1 vertices from the claims of x, in destination order, filtered
  // as the in-memory search filters them (min count, chance, cycles).
  void MakeChildren(int xi) {
    std::map<NodeId, Candidate> cands = std::move(tasks_[xi].candidates);
    tasks_[xi].candidates.clear();
    const NodeId j = tasks_[xi].node;
    std::vector<std::pair<NodeId, NodeId>> on_path;
    for (int t = xi; tasks_[t].parent >= 0; t = tasks_[t].parent)
      on_path.emplace_back(tasks_[tasks_[t].parent].node, tasks_[t].node);
    // Section 5.2.3's chance filter, with what V's own chance members carry
    // (internal::Carried), over the groups the in-memory search sees.
    const TimeNs duration = sum_.last_ns - sum_.first_ns;
    std::vector<std::pair<uint64_t, double>> expected;
    for (const auto& [k, c] : cands) {
      if (c.caused.count == 0) continue;
      expected.emplace_back(
          c.caused.count,
          internal::ExpectedByChance(c.caused, tasks_[xi].windows,
                                     sum_.sent_to[j].at(k), tasks_[xi].count,
                                     duration, p_));
    }
    const bool carry = tasks_[xi].widened ||
                       internal::Widened(tasks_[xi].windows, p_.quantum_ns);
    const double carried = carry ? internal::Carried(tasks_[xi].inherited,
                                                     expected, tasks_[xi].count)
                                 : 0.0;
    size_t gi = 0;
    for (auto& [k, c] : cands) {
      // Claimed only in some window's margins, where V is not exact: not a
      // group of the in-memory search.
      if (c.caused.count == 0) continue;
      const uint64_t sent_jk = sum_.sent_to[j].at(k);
      const double chance = expected[gi++].second + carried;
      if (c.caused.count < p_.min_count ||
          !internal::AboveChance(c.caused.count, chance, p_)) {
        ++graph_.suppressed_rare;
        continue;
      }
      if (internal::OnPath(on_path, j, k)) {
        ++graph_.suppressed_cycles;
        continue;
      }
      const int t = NewTask(xi, k, c.caused.count);
      tasks_[t].delays = internal::EdgeDelays(c.caused);
      tasks_[t].inherited =
          internal::ChanceMembers(c.caused, tasks_[xi].windows, sent_jk,
                                  tasks_[xi].count, duration, carried, p_);
      tasks_[t].widened = carry;
      if (tasks_[t].correlates) {
        tasks_[t].cost = c.cost;
        ChooseMethod(tasks_[t]);
      }
    }
  }

  // Pass 1: what LoadMessages learns besides the messages.
  Status Scan() {
    auto r = open_();
    if (!r.ok()) return r.status();
    if (o_.spool) {
      if (Status s = spool_.Create(); !s.ok()) return s;
    }
    trace::Record rec;
    while ((*r)->Next(rec)) {
      sum_.Add(rec);
      if (o_.spool) {
        if (Status s = spool_.Append({rec.ts_ns, rec.sender, rec.receiver});
            !s.ok())
          return s;
      }
    }
    if (Status s = sum_.Finish(**r); !s.ok()) return s;
    if (o_.spool) {
      if (Status s = spool_.Flush(); !s.ok()) return s;
    }
    path_ = (*r)->path();
    ++graph_.passes;
    return Status::Ok();
  }

  // One walk through the trace in windows of chunk quanta [B, B + C) with
  // margins, deriving V up to level `depth` in each.  The margins: V at level
  // l is exact wherever the raw messages are known (l-1) (max delay + v)
  // before and (l-1) v after (each claim looks that far back and ahead);
  // the correlation needs V over the window plus one overlap-save block, and
  // j's messages D quanta further either way.
  Status Pass(Step step, const std::vector<int>& targets, int depth) {
    needed_.assign(tasks_.size(), 0);
    for (int t : targets)
      for (int a = t; a >= 0 && !needed_[a]; a = tasks_[a].parent)
        needed_[a] = 1;
    const int64_t before = (depth - 1) * (lag_ + tol_q_) + lag_ + 1;
    const int64_t after = (depth - 1) * tol_q_ + block_ + lag_ + 1;
    int64_t chunk = o_.chunk_quanta;
    if (chunk <= 0) {
      const double span = static_cast<double>(
          std::max<TimeNs>(sum_.last_ns - sum_.first_ns, p_.quantum_ns));
      const double per_quantum = static_cast<double>(sum_.messages) *
                                 static_cast<double>(p_.quantum_ns) / span;
      const double want =
          std::max(16.0 * static_cast<double>(before + after),
                   static_cast<double>(o_.chunk_messages) / per_quantum);
      // No window longer than the trace (which also keeps (B + C) * mu
      // within range when the rate is tiny).
      const double whole = span / static_cast<double>(p_.quantum_ns) + 1.0;
      chunk = static_cast<int64_t>(std::min(want, whole));
    }
    // The messages, from the spool or from the input read afresh.
    std::unique_ptr<trace::TraceReader> reader;
    if (o_.spool) {
      if (Status s = spool_.Rewind(); !s.ok()) return s;
    } else {
      auto r = open_();
      if (!r.ok()) return r.status();
      reader = std::move(*r);
    }
    trace::Record rec;
    Status failed;
    auto pull = [&](Msg& m) {
      if (reader == nullptr) {
        if (spool_.Next(m)) return true;
        failed = spool_.status();
        return false;
      }
      if (!reader->Next(rec)) {
        failed = reader->status();
        return false;
      }
      m = {rec.ts_ns, rec.sender, rec.receiver};
      return true;
    };
    MsgQueue buf;
    uint64_t read = 0;
    bool eof = false;
    // Appends the next message to buf; false at the end of the input or on
    // an error (then `failed` or `changed` says which).
    bool changed = false;
    auto take = [&] {
      Msg msg;
      if (!pull(msg)) {
        eof = true;
        return false;
      }
      if (msg.from >= sum_.names.size() || msg.to >= sum_.names.size() ||
          ++read > sum_.messages) {
        changed = true;
        return false;
      }
      buf.push_back(msg);
      return true;
    };
    const TimeNs mu = p_.quantum_ns;
    int64_t b0 = FloorDiv(sum_.first_ns, mu);
    while (true) {
      const TimeNs lo_ns = (b0 - before) * mu;
      const TimeNs hi_ns = (b0 + chunk + after) * mu;
      while (!buf.empty() && buf.front().ts < lo_ns) buf.pop_front();
      while (!eof && (buf.empty() || buf.back().ts < hi_ns)) {
        if (take()) continue;
        if (changed) return Changed();
        if (!failed.ok()) return failed;
      }
      graph_.peak_buffered_messages =
          std::max<uint64_t>(graph_.peak_buffered_messages, buf.size());
      Window(step, targets, depth, buf.all(), hi_ns, b0, b0 + chunk);
      // The next window: B + C, or a later one if nothing lies in between.
      const int64_t next = b0 + chunk;
      const std::span<const Msg> held = buf.all();
      const Msg* it =
          std::partition_point(held.data(), held.data() + held.size(),
                               [&](const Msg& m) { return m.ts < next * mu; });
      if (it == held.data() + held.size()) {
        if (eof) break;
        if (!take()) {
          if (changed) return Changed();
          if (!failed.ok()) return failed;
          break;
        }
        it = &buf.back();
      }
      // Windows stay on the grid first bin + n C; empty ones are skipped.
      b0 = next +
           FloorDiv(std::max<int64_t>(FloorDiv(it->ts, mu) - next, 0), chunk) *
               chunk;
    }
    if (read != sum_.messages) return Changed();
    ++graph_.passes;
    return Status::Ok();
  }

  Status Changed() const {
    return Status::Error(path_ +
                         ": the input changed between two reads of the "
                         "streaming search");
  }

  const SparseSignal& OutSignal(NodeId n) {
    if (!bsig_ok_[n]) {
      bsig_[n] = MakeSignal(cols_[n].ts, p_.quantum_ns);
      bsig_ok_[n] = 1;
      bsig_used_.push_back(n);
    }
    return bsig_[n];
  }

  // One window: the messages of buf with ts < hi_ns; owned bins [b0, b1).
  void Window(Step step, const std::vector<int>& targets, int depth,
              std::span<const Msg> buf, TimeNs hi_ns, int64_t b0, int64_t b1) {
    const size_t nodes = sum_.names.size();
    cols_.resize(nodes);
    bsig_.resize(nodes);
    bsig_ok_.resize(nodes, 0);
    for (auto& c : cols_) {
      c.ts.clear();
      c.to.clear();
    }
    for (NodeId n : bsig_used_) {
      bsig_ok_[n] = 0;
      bsig_[n].clear();
    }
    bsig_used_.clear();
    for (const Msg& m : buf) {
      if (m.ts >= hi_ns) break;
      cols_[m.from].ts.push_back(m.ts);
      cols_[m.from].to.push_back(m.to);
    }
    // V for every needed vertex down to `depth` (the claims' level in a
    // claim pass is done below, with the tallies).
    for (size_t t = 0; t < tasks_.size(); ++t)
      if (needed_[t]) tasks_[t].v.clear();
    for (size_t t = 0; t < tasks_.size(); ++t) {
      Task& x = tasks_[t];
      if (!needed_[t] || x.children.empty()) continue;
      if (step == Step::kClaim && x.level == depth - 1) continue;
      const auto& z = cols_[x.node];
      if (x.level == 0) {
        for (size_t k = 0; k < z.size(); ++k) {
          const int c = x.Child(z.to[k]);
          if (c >= 0 && needed_[c]) tasks_[c].v.push_back(z.ts[k]);
        }
        continue;
      }
      if (x.level >= depth) continue;
      internal::ClaimCaused(z.ts, x.v, x.windows, claimed_, diff_);
      for (size_t k = 0; k < z.size(); ++k) {
        if (claimed_[k] < 0) continue;
        const int c = x.Child(z.to[k]);
        if (c >= 0 && needed_[c]) tasks_[c].v.push_back(z.ts[k]);
      }
    }
    const TimeNs own_lo = b0 * p_.quantum_ns, own_hi = b1 * p_.quantum_ns;
    for (int t : targets) {
      Task& x = tasks_[t];
      switch (step) {
        case Step::kCost: {
          const SparseSignal a = MakeSignal(x.v, p_.quantum_ns);
          const SparseSignal& b = OutSignal(x.node);
          size_t lo = 0, hi = 0;
          for (const Bin& bin : a) {
            if (bin.index < b0) continue;
            if (bin.index >= b1) break;
            x.cost.AddBin(bin, b, lo, hi, lag_, block_);
          }
          break;
        }
        case Step::kCorrelate:
          Correlate(x, b0, b1);
          break;
        case Step::kClaim: {
          const auto& z = cols_[x.node];
          internal::ClaimCaused(z.ts, x.v, x.windows, claimed_, diff_);
          for (size_t k = 0; k < z.size(); ++k) {
            if (claimed_[k] < 0) continue;
            Candidate& c = x.candidates[z.to[k]];
            c.w.push_back(z.ts[k]);
            if (z.ts[k] >= own_lo && z.ts[k] < own_hi)
              c.caused.Add(claimed_[k], diff_[k]);
          }
          for (auto& [k, c] : x.candidates) {
            if (c.w.empty()) continue;
            // The child would correlate: count its cost now, so that its
            // level needs no pass of its own for it.
            if (x.level + 1 < p_.max_depth && sum_.sent[k] > 0) {
              const SparseSignal a = MakeSignal(c.w, p_.quantum_ns);
              const SparseSignal& b = OutSignal(k);
              size_t lo = 0, hi = 0;
              for (const Bin& bin : a) {
                if (bin.index < b0) continue;
                if (bin.index >= b1) break;
                c.cost.AddBin(bin, b, lo, hi, lag_, block_);
              }
            }
            c.w.clear();
          }
          break;
        }
      }
    }
  }

  // Adds x's correlation over the owned bins [b0, b1) of V, in the order
  // Correlator::Correlate adds them.
  void Correlate(Task& x, int64_t b0, int64_t b1) {
    const SparseSignal a = MakeSignal(x.v, p_.quantum_ns);
    const SparseSignal& b = OutSignal(x.node);
    const std::span<const Bin> bs(b);
    if (x.method == CorrelationMethod::kSparse) {
      size_t lo = 0;
      for (const Bin& bin : a) {
        if (bin.index < b0) continue;
        if (bin.index >= b1) break;
        Correlator::AddDirect(bin, bs, lo, lag_, x.corr);
      }
      return;
    }
    // Overlap-save blocks start at the first bin of a not yet covered, as in
    // Correlator::CorrelateFft; one may reach past b1 (the margin covers it).
    x.fft_next =
        corr_.AddFftBlocks(a, bs, lag_, std::max(b0, x.fft_next), b1, x.corr);
  }

  // The tree, numbered and emitted depth first as the in-memory search does.
  Result<StreamResult> Finish() {
    for (const Task& t : tasks_) {
      if (t.level == 0) graph_.roots.push_back(sum_.names[t.node]);
    }
    for (size_t t = 0; t < tasks_.size(); ++t) {
      if (tasks_[t].level != 0) continue;
      const int xi = AddVertex(tasks_[t].node);
      std::vector<int> path{xi};
      std::vector<double> delays;
      for (const auto& [k, c] : tasks_[t].children) {
        (void)k;
        Emit(c, path, delays);
      }
    }
    for (Task& t : tasks_) {
      std::vector<TimeNs>().swap(t.v);
    }
    StreamResult out;
    out.summary = std::move(sum_);
    out.graph = std::move(graph_);
    return out;
  }

  int AddVertex(NodeId n) {
    const int id = static_cast<int>(graph_.vertices.size());
    graph_.vertices.push_back({id, n});
    return id;
  }

  void Emit(int ti, std::vector<int>& path, std::vector<double>& delays) {
    const Task& t = tasks_[ti];
    const int x = AddVertex(t.node);
    graph_.edges.push_back({path.back(), x, t.count, t.delays});
    path.push_back(x);
    delays.push_back(t.delays.front().delay_s);
    for (const auto& [k, c] : t.children) {
      (void)k;
      Emit(c, path, delays);
    }
    if (t.children.empty()) {
      Path p;
      for (int v : path) p.nodes.push_back(sum_.names[graph_.vertices[v].node]);
      p.delays_s = delays;
      p.count = t.count;
      graph_.paths.push_back(std::move(p));
    }
    delays.pop_back();
    path.pop_back();
  }

  const ReaderFactory& open_;
  const Params& p_;
  const StreamOptions& o_;
  const int64_t lag_, block_, tol_q_;
  std::string path_;
  TraceSummary sum_;
  PathGraph graph_;
  Spool spool_;
  std::vector<Task> tasks_;
  Correlator corr_;
  // Per window, reused:
  std::vector<char> needed_;
  std::vector<MessageSet::Sent> cols_;
  std::vector<SparseSignal> bsig_;
  std::vector<char> bsig_ok_;
  std::vector<NodeId> bsig_used_;
  std::vector<int> claimed_;
  std::vector<TimeNs> diff_;
};

}  // namespace

Result<StreamResult> FindPathsStreaming(const ReaderFactory& open,
                                        const Params& params,
                                        const StreamOptions& options) {
  StreamSearch s(open, params, options);
  return s.Run();
}

Result<StreamResult> Convolve(const ReaderFactory& open, bool reopenable,
                              const Params& params,
                              const SearchOptions& options) {
  // An input read once can stream only through a spool, and only when
  // asked to: auto, which starts by holding the messages, cannot give up
  // half-way through such an input.
  if (options.mode == SearchMode::kStream &&
      (reopenable || options.stream.spool)) {
    return FindPathsStreaming(open, params, options.stream);
  }
  const bool stream = options.mode == SearchMode::kAuto && reopenable;
  auto r = open();
  if (!r.ok()) return r.status();
  bool complete = true;
  auto msgs = LoadMessagesUpTo(
      **r, stream ? options.stream_above_messages : UINT64_MAX, &complete);
  if (!msgs.ok()) return msgs.status();
  if (!complete) {
    // Too long to hold: drop what was read and stream from the start.
    *msgs = MessageSet{};
    r->reset();
    auto streamed = FindPathsStreaming(open, params, options.stream);
    // The read given up counts as one, and its messages as held.
    if (streamed.ok()) {
      ++streamed->graph.passes;
      streamed->graph.peak_buffered_messages =
          std::max(streamed->graph.peak_buffered_messages,
                   options.stream_above_messages);
    }
    return streamed;
  }
  auto graph = FindPaths(*msgs, params);
  if (!graph.ok()) return graph.status();
  StreamResult out;
  out.graph = std::move(*graph);
  out.summary = std::move(static_cast<TraceSummary&>(*msgs));
  return out;
}

}  // namespace bbprof::convolution
