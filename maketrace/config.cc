// The maketrace configuration language (docs/maketrace.md): line-oriented,
// '#' comments, top-level keywords at column 0, and tracelet trees written by
// indentation, one call or message per line:
//
//   tracelet browse instances=20 think=1s..3s
//     client -> WS1|WS2 proc=2ms±0.5ms
//       -> AUTH delay=1ms±0.2ms proc=5ms±1ms
//
// Every error names FILE:LINE and what was expected.
#include "maketrace/config.h"

#include <charconv>
#include <cmath>
#include <utility>

#include "base/atomic_file.h"
#include "trace/node_table.h"
#include "trace/op.h"
#include "trace/timestamp.h"

namespace bbprof::maketrace {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitWords(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !IsSpace(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && p == end && std::isfinite(*out);
}

// "250", "200k", "2M" (k = 1e3, M = 1e6, G = 1e9).
bool ParseCount(std::string_view s, uint64_t* out) {
  double mult = 1;
  if (!s.empty() && (s.back() == 'k' || s.back() == 'M' || s.back() == 'G')) {
    mult = s.back() == 'k' ? 1e3 : s.back() == 'M' ? 1e6 : 1e9;
    s.remove_suffix(1);
  }
  double v;
  if (!ParseDouble(s, &v) || v < 0 || v * mult > 1e18) return false;
  double total = v * mult;
  if (total != std::floor(total)) return false;
  *out = static_cast<uint64_t>(total);
  return true;
}

// "1%" or "0.01"; in [0, 1].
bool ParseProbability(std::string_view s, double* out) {
  double scale = 1;
  if (!s.empty() && s.back() == '%') {
    scale = 0.01;
    s.remove_suffix(1);
  }
  double v;
  if (!ParseDouble(s, &v)) return false;
  v *= scale;
  if (v < 0 || v > 1) return false;
  *out = v;
  return true;
}

// "600/s", "30/min", "2/h": events per second.
bool ParseRate(std::string_view s, double* out) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view unit = s.substr(slash + 1);
  double per;
  if (unit == "s") {
    per = 1;
  } else if (unit == "ms") {
    per = 1e-3;
  } else if (unit == "min") {
    per = 60;
  } else if (unit == "h") {
    per = 3600;
  } else {
    return false;
  }
  double v;
  if (!ParseDouble(s.substr(0, slash), &v) || v < 0) return false;
  *out = v / per;
  return true;
}

constexpr double kMaxDelayNs = 1e15;
constexpr size_t kMaxSteps = 1000;
// clients=N names clients 10.9.0.1 up to 10.9.255.254.
constexpr uint64_t kMaxClients = 65534;

// MEAN or MEAN±SD (also MEAN+-SD); SD may be a percentage of MEAN.
std::string ParseDelay(std::string_view s, Delay* out) {
  size_t pm = s.find("\xC2\xB1");
  size_t pm_len = 2;
  if (pm == std::string_view::npos) {
    pm = s.find("+-");
  }
  Delay d;
  std::string err = ParseDuration(s.substr(0, pm), &d.mean_ns);
  if (!err.empty()) return err;
  if (pm != std::string_view::npos) {
    std::string_view sd = s.substr(pm + pm_len);
    if (!sd.empty() && sd.back() == '%') {
      double pct;
      if (!ParseDouble(sd.substr(0, sd.size() - 1), &pct) || pct < 0) {
        return "bad percentage '" + std::string(sd) + "'";
      }
      d.sd_ns = d.mean_ns * pct / 100;
    } else {
      err = ParseDuration(sd, &d.sd_ns);
      if (!err.empty()) return err;
    }
  }
  if (d.mean_ns > kMaxDelayNs || d.sd_ns > kMaxDelayNs) {
    return "'" + std::string(s) +
           "' is too long for a delay (at most 1e15 ns, "
           "about 11 days)";
  }
  *out = d;
  return "";
}

std::vector<std::string> SplitPool(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    size_t bar = s.find('|', i);
    out.emplace_back(
        s.substr(i, bar == std::string_view::npos ? bar : bar - i));
    if (bar == std::string_view::npos) break;
    i = bar + 1;
  }
  return out;
}

class Parser {
 public:
  Parser(std::string file, bool require_length)
      : file_(std::move(file)), require_length_(require_length) {}

  Result<Config> Parse(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size() || pos == 0) {
      size_t nl = text.find('\n', pos);
      std::string_view raw =
          text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
      ++line_;
      BBPROF_RETURN_IF_ERROR(Line(raw));
      if (nl == std::string_view::npos) break;
      pos = nl + 1;
    }
    BBPROF_RETURN_IF_ERROR(FinishTracelet());
    if (config_.tracelets.empty()) {
      return Status::Error(file_ +
                           ": no tracelet (expected at least one "
                           "'tracelet NAME' block)");
    }
    if (require_length_ && config_.duration_ns == 0 && config_.messages == 0) {
      return Status::Error(file_ +
                           ": no length (expected 'duration D' or "
                           "'messages N', or --duration/--messages)");
    }
    return std::move(config_);
  }

 private:
  Status Error(const std::string& what) const {
    return Status::Error(file_ + ":" + std::to_string(line_) + ": " + what);
  }
  Status ErrorAt(int line, const std::string& what) const {
    return Status::Error(file_ + ":" + std::to_string(line) + ": " + what);
  }

  Status Line(std::string_view raw) {
    // A '#' at the start or after a blank starts a comment.
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '#' && (i == 0 || IsSpace(raw[i - 1]))) {
        raw = raw.substr(0, i);
        break;
      }
    }
    size_t indent = 0;
    while (indent < raw.size() && IsSpace(raw[indent])) {
      if (raw[indent] == '\t') {
        return Error("tab in indentation (indent with spaces)");
      }
      ++indent;
    }
    std::string_view body = Trim(raw);
    if (body.empty()) return Status::Ok();
    if (indent > 0) {
      if (tracelet_ == nullptr) {
        return Error(
            "indented line outside a tracelet (expected a "
            "'tracelet NAME' line before it)");
      }
      return StepLine(indent, body);
    }
    BBPROF_RETURN_IF_ERROR(FinishTracelet());
    std::vector<std::string_view> w = SplitWords(body);
    std::string_view kw = w[0];
    std::vector<std::string_view> args(w.begin() + 1, w.end());
    if (kw == "tracelet") return TraceletLine(args);
    if (kw == "start") return StartLine(args);
    if (kw == "duration")
      return OneArg(kw, args, [&](std::string_view a) {
        double ns;
        std::string err = ParseDuration(a, &ns);
        if (!err.empty()) return err;
        if (ns <= 0) return std::string("duration must be positive");
        config_.duration_ns = ns;
        return std::string();
      });
    if (kw == "messages")
      return OneArg(kw, args, [&](std::string_view a) {
        if (!ParseCount(a, &config_.messages) || config_.messages == 0) {
          return "expected a positive message count like 200000 or 200k, "
                 "not '" +
                 std::string(a) + "'";
        }
        return std::string();
      });
    if (kw == "callids") return CallidsLine(args);
    if (kw == "loss")
      return OneArg(kw, args, [&](std::string_view a) {
        if (!ParseProbability(a, &config_.loss_probability)) {
          return "expected a loss probability like 0.01 or 1%, not '" +
                 std::string(a) + "'";
        }
        return std::string();
      });
    if (kw == "sniffer") return SnifferLine(args);
    if (kw == "noise") return NoiseLine(args);
    if (kw == "network") return NetworkLine(args);
    return Error("unknown keyword '" + std::string(kw) +
                 "' (expected tracelet, duration, messages, start, callids, "
                 "loss, sniffer, noise or network)");
  }

  template <typename F>
  Status OneArg(std::string_view kw, const std::vector<std::string_view>& args,
                F f) {
    if (args.size() != 1) {
      return Error("'" + std::string(kw) + "' takes exactly one value");
    }
    std::string err = f(args[0]);
    if (!err.empty()) return Error(std::string(kw) + ": " + err);
    return Status::Ok();
  }

  // Splits "key=value"; a bare word gets an empty value and *bare = true.
  static void KeyValue(std::string_view w, std::string_view* key,
                       std::string_view* value, bool* bare) {
    size_t eq = w.find('=');
    *bare = eq == std::string_view::npos;
    *key = *bare ? w : w.substr(0, eq);
    *value = *bare ? std::string_view() : w.substr(eq + 1);
  }

  Status StartLine(const std::vector<std::string_view>& args) {
    return OneArg("start", args, [&](std::string_view a) {
      trace::TimeNs ns;
      if (!trace::ParseTimestamp(a, &ns) || ns > 4'000'000'000'000'000'000) {
        return "expected epoch seconds up to 4000000000 like 1047680084.5, "
               "not '" +
               std::string(a) + "'";
      }
      config_.start_ns = ns;
      return std::string();
    });
  }

  Status CallidsLine(const std::vector<std::string_view>& args) {
    return OneArg("callids", args, [&](std::string_view a) {
      if (a == "unique") {
        config_.callids = CallidMode::kUnique;
      } else if (a == "none") {
        config_.callids = CallidMode::kNone;
      } else if (a.starts_with("reuse=")) {
        if (!ParseCount(a.substr(6), &config_.callid_reuse) ||
            config_.callid_reuse == 0) {
          return std::string("reuse= expects a positive count of ids");
        }
        config_.callids = CallidMode::kReuse;
      } else {
        return "expected unique, none or reuse=N, not '" + std::string(a) + "'";
      }
      return std::string();
    });
  }

  Status SnifferLine(const std::vector<std::string_view>& args) {
    bool have_rate = false, have_queue = false;
    for (std::string_view w : args) {
      std::string_view k, v;
      bool bare;
      KeyValue(w, &k, &v, &bare);
      if (k == "rate" && !bare) {
        if (!ParseRate(v, &config_.sniffer_rate_per_s) ||
            config_.sniffer_rate_per_s <= 0) {
          return Error(
              "sniffer: rate= expects a positive rate like 600/s, "
              "not '" +
              std::string(v) + "'");
        }
        have_rate = true;
      } else if (k == "queue" && !bare) {
        if (!ParseCount(v, &config_.sniffer_queue)) {
          return Error("sniffer: queue= expects a packet count, not '" +
                       std::string(v) + "'");
        }
        have_queue = true;
      } else {
        return Error("sniffer: unknown setting '" + std::string(w) +
                     "' (expected rate=R/s and queue=N)");
      }
    }
    if (!have_rate || !have_queue) {
      return Error("sniffer: expected both rate=R/s and queue=N");
    }
    return Status::Ok();
  }

  Status NoiseLine(const std::vector<std::string_view>& args) {
    if (args.empty()) {
      return Error(
          "noise: expected oneway=R/s nodes=A|B, timeout=P or "
          "duplicate=P [after=D]");
    }
    bool have_nodes = false;
    for (std::string_view w : args) {
      std::string_view k, v;
      bool bare;
      KeyValue(w, &k, &v, &bare);
      if (bare) {
        return Error("noise: expected key=value, not '" + std::string(w) + "'");
      }
      if (k == "oneway") {
        if (!ParseRate(v, &config_.oneway_rate_per_s)) {
          return Error("noise: oneway= expects a rate like 5/s, not '" +
                       std::string(v) + "'");
        }
      } else if (k == "nodes") {
        config_.oneway_nodes = SplitPool(v);
        BBPROF_RETURN_IF_ERROR(CheckPool(config_.oneway_nodes, v));
        if (config_.oneway_nodes.size() < 2) {
          return Error("noise: nodes= needs at least two nodes (A|B)");
        }
        have_nodes = true;
      } else if (k == "timeout") {
        if (!ParseProbability(v, &config_.timeout_probability)) {
          return Error(
              "noise: timeout= expects a probability like 0.01 or "
              "1%, not '" +
              std::string(v) + "'");
        }
      } else if (k == "duplicate") {
        if (!ParseProbability(v, &config_.duplicate_probability)) {
          return Error(
              "noise: duplicate= expects a probability like 0.001 "
              "or 0.1%, not '" +
              std::string(v) + "'");
        }
      } else if (k == "after") {
        std::string err = ParseDelay(v, &config_.duplicate_after);
        if (!err.empty()) return Error("noise: after=: " + err);
      } else {
        return Error("noise: unknown setting '" + std::string(k) +
                     "' (expected oneway, nodes, timeout, duplicate or after)");
      }
    }
    if (config_.oneway_rate_per_s > 0 && config_.oneway_nodes.empty()) {
      return Error(
          "noise: oneway= needs nodes=A|B|... to pick senders and "
          "receivers from");
    }
    (void)have_nodes;
    return Status::Ok();
  }

  Status NetworkLine(const std::vector<std::string_view>& args) {
    if (args.empty()) return Error("network: expected delay=D±SD [min=D]");
    for (std::string_view w : args) {
      std::string_view k, v;
      bool bare;
      KeyValue(w, &k, &v, &bare);
      if (k == "delay" && !bare) {
        std::string err = ParseDelay(v, &config_.network);
        if (!err.empty()) return Error("network: delay=: " + err);
      } else if (k == "min" && !bare) {
        std::string err = ParseDuration(v, &config_.network_min_ns);
        if (!err.empty()) return Error("network: min=: " + err);
      } else {
        return Error("network: unknown setting '" + std::string(w) +
                     "' (expected delay=D±SD and min=D)");
      }
    }
    return Status::Ok();
  }

  Status CheckPool(const std::vector<std::string>& pool,
                   std::string_view text) {
    for (const std::string& n : pool) {
      std::string why = trace::CheckNodeName(n);
      if (!why.empty()) {
        return Error(why + " in '" + std::string(text) +
                     "' (expected node names separated by '|')");
      }
    }
    return Status::Ok();
  }

  Status TraceletLine(const std::vector<std::string_view>& args) {
    if (args.empty() || args[0].find('=') != std::string_view::npos) {
      return Error(
          "tracelet: expected a name: 'tracelet NAME [style=rpc|"
          "message] [instances=N] [think=MIN..MAX] [rate=R/s]'");
    }
    if (config_.tracelets.size() >= 65536) {
      return Error("more than 65536 tracelets");
    }
    Tracelet t;
    t.name = std::string(args[0]);
    t.line = line_;
    for (const Tracelet& other : config_.tracelets) {
      if (other.name == t.name) {
        return Error("tracelet '" + t.name + "' already defined on line " +
                     std::to_string(other.line));
      }
    }
    bool closed = false;
    for (size_t i = 1; i < args.size(); ++i) {
      std::string_view k, v;
      bool bare;
      KeyValue(args[i], &k, &v, &bare);
      if (bare) {
        return Error("tracelet: expected key=value, not '" +
                     std::string(args[i]) + "'");
      }
      if (k == "style") {
        if (v == "rpc") {
          t.style = TraceletStyle::kRpc;
        } else if (v == "message") {
          t.style = TraceletStyle::kMessage;
        } else {
          return Error("tracelet: style= expects rpc or message, not '" +
                       std::string(v) + "'");
        }
      } else if (k == "instances") {
        uint64_t n;
        if (!ParseCount(v, &n) || n == 0 || n > 1'000'000) {
          return Error(
              "tracelet: instances= expects a count from 1 to "
              "1000000, not '" +
              std::string(v) + "'");
        }
        t.instances = static_cast<uint32_t>(n);
        closed = true;
      } else if (k == "think") {
        size_t dots = v.find("..");
        std::string err;
        if (dots == std::string_view::npos) {
          err = ParseDuration(v, &t.think_min_ns);
          t.think_max_ns = t.think_min_ns;
        } else {
          err = ParseDuration(v.substr(0, dots), &t.think_min_ns);
          if (err.empty()) {
            err = ParseDuration(v.substr(dots + 2), &t.think_max_ns);
          }
        }
        if (!err.empty()) return Error("tracelet: think=: " + err);
        if (t.think_max_ns < t.think_min_ns) {
          return Error("tracelet: think=MIN..MAX needs MIN <= MAX");
        }
        closed = true;
      } else if (k == "clients") {
        uint64_t n;
        if (!ParseCount(v, &n) || n == 0 || n > kMaxClients) {
          return Error("tracelet: clients= expects a count from 1 to " +
                       std::to_string(kMaxClients) + ", not '" +
                       std::string(v) + "'");
        }
        t.clients = static_cast<uint32_t>(n);
      } else if (k == "rate") {
        if (!ParseRate(v, &t.rate_per_s) || t.rate_per_s <= 0) {
          return Error(
              "tracelet: rate= expects a positive rate like 5/s, "
              "not '" +
              std::string(v) + "'");
        }
      } else {
        return Error("tracelet: unknown setting '" + std::string(k) +
                     "' (expected style, instances, think or rate)");
      }
    }
    if (closed && t.rate_per_s > 0) {
      return Error(
          "tracelet: rate= (open arrivals) cannot be combined with "
          "instances= or think= (closed-loop clients)");
    }
    config_.tracelets.push_back(std::move(t));
    tracelet_ = &config_.tracelets.back();
    stack_.clear();
    steps_ = 0;
    return Status::Ok();
  }

  Status FinishTracelet() {
    if (tracelet_ != nullptr && tracelet_->roots.empty()) {
      return ErrorAt(tracelet_->line,
                     "tracelet '" + tracelet_->name +
                         "' has no steps (expected indented lines "
                         "'CALLER -> CALLEE ...' under it)");
    }
    tracelet_ = nullptr;
    stack_.clear();
    return Status::Ok();
  }

  Status StepLine(size_t indent, std::string_view body) {
    size_t arrow = body.find("->");
    if (arrow == std::string_view::npos) {
      return Error(
          "expected 'CALLER -> CALLEE [delay=D±SD] [proc=D±SD] "
          "[parallel] [after-return] [op=OP] [weight=W]', not '" +
          std::string(body) + "'");
    }
    std::string_view caller = Trim(body.substr(0, arrow));
    std::vector<std::string_view> w = SplitWords(body.substr(arrow + 2));
    if (w.empty() || w[0].find('=') != std::string_view::npos) {
      return Error("expected a callee after '->'");
    }
    Step s;
    s.line = line_;
    s.callee_text = std::string(w[0]);
    s.callee_pool = SplitPool(w[0]);
    BBPROF_RETURN_IF_ERROR(CheckPool(s.callee_pool, w[0]));
    if (++steps_ > kMaxSteps) {
      return Error("tracelet '" + tracelet_->name + "' has more than " +
                   std::to_string(kMaxSteps) + " steps");
    }
    const bool rpc = tracelet_->style == TraceletStyle::kRpc;
    bool have_weight = false;
    for (size_t i = 1; i < w.size(); ++i) {
      std::string_view k, v;
      bool bare;
      KeyValue(w[i], &k, &v, &bare);
      if (bare && k == "parallel") {
        if (!rpc) {
          return Error(
              "'parallel' is for rpc tracelets (in a message "
              "tracelet every child is sent independently)");
        }
        s.parallel = true;
      } else if (bare && k == "after-return") {
        if (!rpc) {
          return Error(
              "'after-return' is for rpc tracelets (messages have no return)");
        }
        s.after_return = true;
      } else if (k == "delay" && !bare) {
        std::string err = ParseDelay(v, &s.delay);
        if (!err.empty()) return Error("delay=: " + err);
      } else if (k == "proc" && !bare) {
        if (!rpc) {
          return Error(
              "proc= is for rpc tracelets (messages have no "
              "return); use delay= on the next hop");
        }
        std::string err = ParseDelay(v, &s.proc);
        if (!err.empty()) return Error("proc=: " + err);
      } else if (k == "weight" && !bare) {
        if (!ParseDouble(v, &s.weight) || s.weight <= 0) {
          return Error("weight= expects a positive number, not '" +
                       std::string(v) + "'");
        }
        have_weight = true;
      } else if (k == "op" && !bare) {
        if (!rpc) {
          return Error(
              "op= is for rpc tracelets (an operation names what a call "
              "asks for)");
        }
        std::string why = trace::CheckOpToken(v);
        if (!why.empty()) {
          return Error("op=: " + why + " in '" + std::string(v) + "'");
        }
        s.op = std::string(v);
      } else {
        return Error("unknown step setting '" + std::string(w[i]) +
                     "' (expected delay=D±SD, " +
                     (rpc ? "proc=D±SD, parallel, after-return, op=OP, " : "") +
                     "or weight=W)");
      }
    }
    // Pop to the parent: the nearest line indented less than this one.
    while (!stack_.empty() && stack_.back().indent >= indent) {
      if (stack_.back().indent > indent &&
          (stack_.size() == 1 || stack_[stack_.size() - 2].indent < indent)) {
        return Error("indentation does not line up with any enclosing line");
      }
      stack_.pop_back();
    }
    if (stack_.empty()) {
      if (root_indent_ != 0 && tracelet_->roots.size() > 0 &&
          indent != root_indent_) {
        return Error(
            "indentation does not line up with the tracelet's "
            "first line");
      }
      root_indent_ = indent;
      if (caller.empty()) {
        return Error(
            "a tracelet's first step needs a caller "
            "('CALLER -> CALLEE')");
      }
      s.caller_pool = SplitPool(caller);
      BBPROF_RETURN_IF_ERROR(CheckPool(s.caller_pool, caller));
      if (tracelet_->roots.empty()) root_indent_ = indent;
      tracelet_->roots.push_back(std::move(s));
      stack_.push_back({indent, &tracelet_->roots.back()});
      return Status::Ok();
    }
    Step* parent = stack_.back().step;
    if (have_weight) {
      return Error(
          "weight= is for a tracelet's top-level steps (it chooses "
          "among alternatives)");
    }
    if (!caller.empty() && caller != parent->callee_text) {
      return Error("caller '" + std::string(caller) +
                   "' does not match the enclosing step's callee '" +
                   parent->callee_text + "' (write '-> " + s.callee_text +
                   "' or '" + parent->callee_text + " -> " + s.callee_text +
                   "')");
    }
    parent->children.push_back(std::move(s));
    stack_.push_back({indent, &parent->children.back()});
    return Status::Ok();
  }

  struct Level {
    size_t indent;
    Step* step;
  };
  std::string file_;
  bool require_length_;
  int line_ = 0;
  Config config_;
  Tracelet* tracelet_ = nullptr;
  size_t root_indent_ = 0;
  size_t steps_ = 0;
  std::vector<Level> stack_;
};

}  // namespace

// Bounds that keep every timestamp sum inside int64 nanoseconds: start
// <= 4e18, length <= 1e17, an instance <= kMaxSteps * kMaxDelayNs <= 1e18.
constexpr double kMaxDurationNs = 1e17;

std::string ParseDuration(std::string_view s, double* ns) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1},     {"us", 1e3},   {"\xC2\xB5s", 1e3}, {"ms", 1e6},
      {"min", 60e9}, {"h", 3600e9}, {"s", 1e9},
  };
  for (const auto& [unit, scale] : kUnits) {
    if (s.size() > unit.size() && s.ends_with(unit)) {
      double v;
      if (!ParseDouble(s.substr(0, s.size() - unit.size()), &v) || v < 0) {
        return "expected a non-negative duration like 10ms, 200us or 1.5s, "
               "not '" +
               std::string(s) + "'";
      }
      if (v * scale > kMaxDurationNs) {
        return "'" + std::string(s) +
               "' is too long (at most 1e17 ns, about 3 years)";
      }
      *ns = v * scale;
      return "";
    }
  }
  double v;
  if (ParseDouble(s, &v) && v == 0) {
    *ns = 0;
    return "";
  }
  return "expected a duration with a unit (ns, us, ms, s, min, h) like 10ms, "
         "not '" +
         std::string(s) + "'";
}

Result<Config> ParseConfig(std::string_view text, const std::string& file,
                           bool require_length) {
  Parser p(file, require_length);
  Result<Config> c = p.Parse(text);
  if (!c.ok()) return c;
  size_t slash = file.find_last_of('/');
  c->name = slash == std::string::npos ? file : file.substr(slash + 1);
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (char ch : text) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  c->hash = h;
  return c;
}

Result<Config> LoadConfig(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path);
}

}  // namespace bbprof::maketrace
