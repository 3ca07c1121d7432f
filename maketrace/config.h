// Config: the parsed maketrace configuration (docs/maketrace.md), the input of
// the tracelet-based trace generator of section 7.1.1. A configuration names
// a set of tracelets (templates of causal path patterns: trees of RPC calls or
// trees of free-form messages, with Gaussian delays), how each is invoked
// (parallel closed-loop clients with a uniform think time, or an open Poisson
// rate), the trace's length, the call-id policy, the noise to add and the
// sniffer-loss model of section 7.5.5.
#ifndef BBPROF_MAKETRACE_CONFIG_H_
#define BBPROF_MAKETRACE_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace bbprof::maketrace {

// A Gaussian delay truncated at zero (section 7.5.4), in nanoseconds.
struct Delay {
  double mean_ns = 0;
  double sd_ns = 0;
};

// One line of a tracelet tree: a call (RPC style) or a message (message
// style) from the parent's node to one node picked from `callee_pool`.
struct Step {
  std::vector<std::string> caller_pool;  // roots only
  std::vector<std::string> callee_pool;
  std::string callee_text;  // as written ("WS1|WS2"), for messages
  // RPC: from the caller's anchor (its entry, or the end of the previous
  // serial child or parallel group) to sending this call. Message: from the
  // parent message's arrival (or the instance start for a root) to sending.
  Delay delay;
  // RPC only: the callee's time from its last child's return (or from the
  // call's arrival if it has no children) to sending its return.
  Delay proc;
  bool parallel = false;  // RPC only: runs alongside adjacent parallel steps
  // RPC only: sent `delay` after the call that entered the node has
  // returned (an asynchronous server: its reply goes out first, the call
  // it causes later), without holding that return back.
  bool after_return = false;
  // RPC only: the operation the call asks for (trace field 7), written on
  // the CALL and its RET; empty for none. A valid op token (trace/op.h).
  std::string op;
  double weight = 1;  // roots only: choice among a tracelet's roots
  int line = 0;
  std::vector<Step> children;
};

enum class TraceletStyle { kRpc, kMessage };

struct Tracelet {
  std::string name;
  TraceletStyle style = TraceletStyle::kRpc;
  // Closed loop: `instances` clients, each running one instance, waiting a
  // think time uniform in [think_min, think_max], and starting again.
  uint32_t instances = 1;
  double think_min_ns = 0;
  double think_max_ns = 0;
  // Open loop (when > 0): instances start as a Poisson stream of this rate
  // (per second), however many are already running.
  double rate_per_s = 0;
  // When > 0: each instance's root caller is one of this many client
  // addresses (10.9.0.1, 10.9.0.2, ...), picked per instance, instead of
  // the caller written in the root step: many external clients, as a
  // capture of real traffic sees them.
  uint32_t clients = 0;
  std::vector<Step> roots;  // alternatives, one picked per instance by weight
  int line = 0;
};

enum class CallidMode { kUnique, kNone, kReuse };

struct Config {
  std::string name;   // file name without folders
  uint64_t hash = 0;  // FNV-1a of the file's bytes, for #meta
  int64_t start_ns = 1'000'000'000LL * 1'000'000'000LL;  // trace origin
  double duration_ns = 0;                                // 0: not set
  uint64_t messages = 0;                                 // 0: not set
  CallidMode callids = CallidMode::kUnique;
  uint64_t callid_reuse = 0;  // kReuse: ids cycle through 1..callid_reuse
  // Loss (section 7.5.5): random loss, and a sniffer with a peak capture
  // rate and a finite queue that drops packets that would overflow it.
  double loss_probability = 0;
  double sniffer_rate_per_s = 0;  // 0: no sniffer model
  uint64_t sniffer_queue = 0;
  // Noise.
  double oneway_rate_per_s = 0;
  std::vector<std::string> oneway_nodes;
  double timeout_probability = 0;
  double duplicate_probability = 0;
  Delay duplicate_after{200e6, 50e6};
  // Per-host views: network transit time of each message.
  Delay network{200e3, 50e3};
  double network_min_ns = 20e3;
  std::vector<Tracelet> tracelets;
};

// Parses configuration text; `file` names it in error messages
// ("FILE:LINE: what was expected"). Without `require_length`, a missing
// 'duration'/'messages' is accepted (a command-line flag gives it).
Result<Config> ParseConfig(std::string_view text, const std::string& file,
                           bool require_length = true);
// Reads and parses a configuration file.
Result<Config> LoadConfig(const std::string& path);

// Parses "10ms", "200us", "1.5s", "0" into nanoseconds (for flags too).
// Returns an empty string on success, else what is wrong.
std::string ParseDuration(std::string_view text, double* ns);

}  // namespace bbprof::maketrace

#endif  // BBPROF_MAKETRACE_CONFIG_H_
