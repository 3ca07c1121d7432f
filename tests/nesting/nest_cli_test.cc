// End-to-end tests of `bbprof nest` through the binary: output, JSON to a
// file, and exit codes for bad traces and bad flags.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::RunCli;
using bbprof::testing::TempDir;

const char kTrace[] =
    "0.000 CALL client WS 1\n0.001 CALL WS DB 2\n0.0035 RET DB WS 2\n0.004 RET "
    "WS client 1\n";

TEST(NestCliTest, WritesReportAndJson) {
  TempDir dir;
  std::string t = dir.Write("a.trace", kTrace);
  std::string out;
  ASSERT_EQ(RunCli("nest " + t + " --json " + dir.File("r.json"), &out), 0)
      << out;
  EXPECT_NE(out.find("clients->WS(DB)"), std::string::npos) << out;
  EXPECT_NE(out.find("most time added by DB"), std::string::npos) << out;
  auto j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(j["patterns"][0]["signature"], "clients->WS(DB)");
}

// A report with no pattern says why: --min-count cut them all (stderr
// says so, and how many there were), or no call was a complete root.
TEST(NestCliTest, AnEmptyReportSaysWhy) {
  TempDir dir;
  const std::string t = dir.Write("a.trace", kTrace);
  std::string out;
  ASSERT_EQ(RunCli("nest " + t + " --min-count 1000000", &out), 0) << out;
  EXPECT_NE(out.find("no path patterns found"), std::string::npos) << out;
  EXPECT_NE(out.find("--min-count 1000000 kept none of the 1 patterns found"),
            std::string::npos)
      << out;
  ASSERT_EQ(RunCli("nest -q " + t + " --min-count 1000000", &out), 0) << out;
  EXPECT_EQ(out.find("kept none"), std::string::npos) << out;
}

// Issue 16, defect 8: calls never answered and distinct names past small
// limits, through the binaries: nest and stats evict and fold, count it in
// their JSON, warn once on stderr naming the flag (not with -q), and pair
// what remains as without the limits. Bad limit values are usage errors.
TEST(NestCliTest, PendingCallAndNodeLimitsEvictFoldCountAndWarn) {
  TempDir dir;
  std::string text = kTrace;
  for (int i = 0; i < 50; ++i) {
    text += "0.01" + std::to_string(10 + i) + " CALL c" + std::to_string(i) +
            " WS lost" + std::to_string(i) + "\n";
  }
  text +=
      "0.1 CALL client WS 3\n0.101 CALL WS DB 4\n0.1035 RET DB WS 4\n0.104 RET "
      "WS client 3\n";
  std::string t = dir.Write("lost.trace", text);
  const std::string limits = " --max-pending-calls 5 --max-nodes 20";
  std::string out;
  ASSERT_EQ(
      RunCli("nest " + t + limits + " --json " + dir.File("r.json"), &out), 0)
      << out;
  EXPECT_NE(out.find("warning: 47 calls were still waiting"), std::string::npos)
      << out;
  EXPECT_NE(out.find("raise --max-pending-calls"), std::string::npos) << out;
  EXPECT_NE(out.find("warning: more than 20 distinct node names"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("raise --max-nodes"), std::string::npos) << out;
  auto j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(j["input"]["pending_calls_evicted"], 47);
  EXPECT_EQ(j["input"]["node_names_folded"], 33);  // c17 ... c49
  EXPECT_EQ(j["input"]["unmatched_calls"], 50);
  EXPECT_EQ(j["input"]["call_pairs"], 4);
  EXPECT_EQ(j["patterns"][0]["signature"], "clients->WS(DB)");
  EXPECT_EQ(j["patterns"][0]["count"], 2);
  ASSERT_EQ(
      RunCli("nest -q " + t + limits + " --json " + dir.File("q.json"), &out),
      0);
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  ASSERT_EQ(RunCli("nest " + t + " --json " + dir.File("d.json"), &out), 0)
      << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  auto d = nlohmann::json::parse(ReadFile(dir.File("d.json")));
  EXPECT_EQ(d["input"]["pending_calls_evicted"], 0);
  EXPECT_EQ(d["patterns"], j["patterns"]);

  ASSERT_EQ(
      RunCli("stats " + t + limits + " --json " + dir.File("s.json"), &out), 0)
      << out;
  EXPECT_NE(out.find("raise --max-pending-calls"), std::string::npos) << out;
  EXPECT_NE(out.find("raise --max-nodes"), std::string::npos) << out;
  auto s = nlohmann::json::parse(ReadFile(dir.File("s.json")));
  EXPECT_EQ(s["pending_calls_evicted"], 47);
  EXPECT_EQ(s["calls_without_return"], 50);
  EXPECT_EQ(s["node_names_folded"], 33);
  for (const char* cmd : {"nest", "stats"}) {
    for (const char* bad : {" --max-pending-calls=-3",
                            " --max-pending-calls many", " --max-nodes 1.5"}) {
      EXPECT_EQ(RunCli(std::string(cmd) + " " + t + bad, &out), 2)
          << cmd << bad;
      EXPECT_NE(out.find("must be a whole number"), std::string::npos) << out;
    }
  }
}

// Node names and callids that are not UTF-8 or hold control bytes are
// refused when read, with FILE:LINE and the bytes escaped, by every
// command, not after the whole analysis by the JSON writer of nest --json
// and stats --json ("internal error: json type_error.316").
TEST(NestCliTest, InvalidUtf8AndControlBytesAreRefusedAtReadTime) {
  TempDir dir;
  std::string bad_name =
      dir.Write("n.trace", "0.000 CALL client WS 1\n0.001 CALL WS D\xff 2\n");
  std::string bad_callid =
      dir.Write("c.trace", "0.000 CALL client WS 1\x1b[2J\n");
  const std::string json = " --json " + dir.File("r.json") + " ";
  std::string out;
  for (const char* cmd : {"nest", "stats"}) {
    EXPECT_EQ(RunCli(cmd + json + bad_name, &out), 1) << cmd;
    EXPECT_NE(
        out.find(bad_name +
                 ":2: bad receiver: node name 'D\\xff' is not valid UTF-8"),
        std::string::npos)
        << out;
    EXPECT_EQ(out.find("internal error"), std::string::npos) << out;
    EXPECT_EQ(RunCli(cmd + json + bad_callid, &out), 1) << cmd;
    EXPECT_NE(out.find(bad_callid + ":1: bad callid '1\\x1b[2J' contains "
                                    "whitespace or control byte 0x1b"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  }
  // The binary writer and the text reader agree: convert refuses the same.
  EXPECT_EQ(RunCli("convert " + bad_callid + " " + dir.File("c.bbt"), &out), 1);
  EXPECT_NE(out.find(bad_callid + ":1: bad callid"), std::string::npos) << out;
}

// nest reads binary traces with numeric ids (numbers, not text) and text
// traces with text ids: the same trace (a maketrace sample, numeric callids
// and the pathids eval needs) in both forms gives the same patterns and the
// same evaluation.
TEST(NestCliTest, TextAndBinaryFormsOfATraceGiveTheSameResult) {
  TempDir dir;
  const std::string sample =
      std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace";
  std::string text = dir.File("t.trace"), bin = dir.File("t.bbt");
  std::string out;
  ASSERT_EQ(RunCli("convert " + sample + " " + text, &out), 0) << out;
  ASSERT_EQ(RunCli("convert " + text + " " + bin, &out), 0) << out;
  for (const std::string* t : {&text, &bin}) {
    const std::string name = t == &text ? "text" : "bin";
    ASSERT_EQ(RunCli("nest " + *t + " -q --json " + dir.File(name + ".json") +
                         " --requests " + dir.File(name + ".otlp.json"),
                     &out),
              0)
        << out;
    ASSERT_EQ(RunCli("eval " + dir.File(name + ".json") + " --truth " + *t +
                         " -q --json " + dir.File(name + ".eval.json"),
                     &out),
              0)
        << out;
  }
  auto a = nlohmann::json::parse(ReadFile(dir.File("text.json")));
  auto b = nlohmann::json::parse(ReadFile(dir.File("bin.json")));
  ASSERT_GT(a["patterns"].size(), 0u);
  EXPECT_EQ(a["patterns"], b["patterns"]);
  EXPECT_EQ(a["input"]["call_pairs"], b["input"]["call_pairs"]);
  auto ea = nlohmann::json::parse(ReadFile(dir.File("text.eval.json")));
  auto eb = nlohmann::json::parse(ReadFile(dir.File("bin.eval.json")));
  EXPECT_EQ(ea["instances"], eb["instances"]);
  // eval re-runs the nesting on the usable cores by default (--threads
  // auto); one thread gives the same figures.
  ASSERT_EQ(RunCli("eval " + dir.File("bin.json") + " --truth " + bin +
                       " -q --threads 1 --json " + dir.File("one.eval.json"),
                   &out),
            0)
      << out;
  EXPECT_EQ(ReadFile(dir.File("bin.eval.json")),
            ReadFile(dir.File("one.eval.json")));
  EXPECT_EQ(RunCli("eval " + dir.File("bin.json") + " --truth " + bin +
                       " -q --threads many",
                   &out),
            2)
      << out;
  EXPECT_NE(out.find("--threads must be auto or between 1 and 256"),
            std::string::npos)
      << out;
}

// Scores a maketrace sample with nest at the given extra flags; returns the
// evaluation JSON (eval scores the result's patterns and the parent choices
// of the requests nest exported).
nlohmann::json NestAndEval(TempDir& dir, const std::string& trace,
                           const std::string& flags, const std::string& tag) {
  const std::string r = dir.File(tag + ".json");
  const std::string e = dir.File(tag + ".eval.json");
  std::string out;
  EXPECT_EQ(RunCli("nest " + trace + " -q " + flags + " --json " + r +
                       " --requests " + dir.File(tag + ".otlp.json"),
                   &out),
            0)
      << out;
  EXPECT_EQ(RunCli("eval " + r + " --truth " + trace + " -q --json " + e, &out),
            0)
      << out;
  auto result = nlohmann::json::parse(ReadFile(r));
  auto eval = nlohmann::json::parse(ReadFile(e));
  eval["result_params"] = result["params"];
  return eval;
}

// A sample of samples/NAME.conf, 60,000 messages at seed 3, as a binary trace.
std::string MakeSample(TempDir& dir, const std::string& name) {
  const std::string t = dir.File(name + ".bbt");
  std::string out;
  EXPECT_EQ(RunCli("maketrace " + std::string(BBPROF_SOURCE_DIR) + "/samples/" +
                       name + ".conf -q --messages 60000 --seed 3 -o " + t,
                   &out),
            0)
      << out;
  return t;
}

// --timings writes each pass's wall time to standard error, even with
// --quiet, in the order the run meets them, then their sum and the whole
// run's; the result is the same bytes as without it. In memory each line
// also has the process's CPU seconds and the cores they kept busy (the
// two over the wall seconds); streamed, where the reader runs beside the
// passes, not, and a line says why. Streamed, every segment's passes add
// up under the same names.
TEST(NestCliTest, TimingsListEveryPassAndChangeNothing) {
  TempDir dir;
  const std::string t = MakeSample(dir, "multitier-normal");
  std::string out;
  ASSERT_EQ(RunCli("nest " + t + " -q --json " + dir.File("plain.json"), &out),
            0)
      << out;
  EXPECT_EQ(out.find("wall seconds"), std::string::npos) << out;
  const std::vector<std::string> passes = {
      "read and pair (step 1)",
      "client folding, op keys, lost returns, return order",
      "skew estimate",
      "clock correction",
      "candidates (step 2)",
      "scoreboards (step 3), components, timeline edges",
      "parent choice (step 4)",
      "timeline learning",
      "timeline re-choice",
      "observed times restored",
      "pattern table (step 5)",
      "the passes above",
      "the whole run"};
  for (const char* how : {" --threads 2", " --search stream --segment-messages 20000 --threads 1"}) {
    SCOPED_TRACE(how);
    ASSERT_EQ(RunCli("nest " + t + " -q --timings --json " +
                         dir.File("timed.json") + how,
                     &out),
              0)
        << out;
    const bool streamed = std::string(how).find("stream") != std::string::npos;
    if (!streamed) {
      EXPECT_EQ(ReadFile(dir.File("timed.json")),
                ReadFile(dir.File("plain.json")));
    }
    EXPECT_EQ(out.find("CPU seconds") != std::string::npos, !streamed) << out;
    EXPECT_EQ(out.find("(no CPU column") != std::string::npos, streamed) << out;
    // After the text report (standard output, then standard error).
    size_t at = out.find("nest: wall seconds by pass (");
    ASSERT_NE(at, std::string::npos) << out;
    // Each pass once, in order, with a time; the sum is theirs.
    double sum = 0, listed_sum = -1, whole = -1;
    for (const std::string& pass : passes) {
      const size_t found = out.find("  " + pass + " ", at);
      ASSERT_NE(found, std::string::npos) << pass << "\n" << out;
      at = found + pass.size() + 2;
      const std::string line = out.substr(at, out.find('\n', at) - at);
      std::istringstream fields(line);
      double seconds = -1, cpu = -1;
      std::string busy, extra;
      fields >> seconds;
      EXPECT_GE(seconds, 0) << pass;
      if (streamed) {
        EXPECT_FALSE(fields >> cpu) << pass << ": " << line;
      } else {
        // CPU seconds, then the cores busy ("-" where the wall time is
        // too short for a ratio); nothing after.
        ASSERT_TRUE(fields >> cpu >> busy) << pass << ": " << line;
        EXPECT_GE(cpu, 0) << pass;
        EXPECT_FALSE(fields >> extra) << pass << ": " << line;
        if (seconds >= 0.0005) {
          const double cores = std::stod(busy);
          EXPECT_NEAR(cores, cpu / seconds, 0.01 + 0.006 / seconds) << line;
          // Two threads at most, the pairer's reader included; every
          // helper has ended when its pass does, so the kernel has counted
          // all of its time.
          if (seconds >= 0.002) {
            EXPECT_LE(cores, 2.5) << pass << ": " << line;
          }
        } else {
          EXPECT_EQ(busy, "-") << pass << ": " << line;
        }
      }
      if (pass == "the passes above") {
        listed_sum = seconds;
      } else if (pass == "the whole run") {
        whole = seconds;
      } else {
        sum += seconds;
      }
      EXPECT_EQ(out.find("  " + pass + " ", at), std::string::npos)
          << pass << " listed twice\n" << out;
    }
    EXPECT_NEAR(listed_sum, sum, 0.006) << out;
    EXPECT_GT(whole, 0) << out;
  }
}

// Refinement (the default, one pass) re-chooses each call's parent knowing
// all its siblings: on the Children-parallel case of section 7.5.2, where
// greedy assignment swaps parallel children, it makes fewer false-negative
// instances than the paper's single pass (--refine-passes 0), as eval
// scores each result's exported requests. (Timeline passes, which
// follow refinement by default, are off here to see refinement alone.)
TEST(NestCliTest, RefinementMakesFewerMistakesThanTheGreedyPass) {
  TempDir dir;
  const std::string t = MakeSample(dir, "children-parallel");
  double fn[2];
  for (int passes : {0, 1}) {
    auto eval = NestAndEval(
        dir, t, "--timeline-passes 0 --refine-passes " + std::to_string(passes),
        "r" + std::to_string(passes));
    EXPECT_EQ(eval["result_params"]["refine_passes"], passes);
    fn[passes] = eval["instances"]["false_negative_rate"];
  }
  EXPECT_LT(fn[1], fn[0] - 0.01) << "greedy " << fn[0] << ", refined " << fn[1];
  std::string out;
  EXPECT_EQ(RunCli("nest " + t + " --refine-passes -1", &out), 2);
}

// Timeline passes (the default, two) score a call by the gap since the event
// that anchors it (its parent's arrival or an earlier child's return), by
// the multiset of calls each anchor spawns, and by the parent's tail. On
// Children-0/2 of section 7.5.2 (B calls C twice in series in one pattern,
// not at all in the other) the paper's start-delay scores confuse the two
// patterns' calls; the timeline tells them apart: 10.8% false negative
// instances without it, 2.8% with it (seed 3).
TEST(NestCliTest, TimelinePassesSeparateSerialChildrenTheStartDelayBlurs) {
  TempDir dir;
  const std::string t = MakeSample(dir, "children-0-2");
  std::string out;
  auto off = NestAndEval(dir, t, "--timeline-passes 0", "off");
  auto on = NestAndEval(dir, t, "", "on");
  EXPECT_EQ(off["result_params"]["timeline_passes"], 0);
  EXPECT_EQ(on["result_params"]["timeline_passes"], 2);
  double fn_off = off["instances"]["false_negative_rate"];
  double fn_on = on["instances"]["false_negative_rate"];
  EXPECT_LT(fn_on, fn_off - 0.03) << "without " << fn_off << ", with " << fn_on;
  EXPECT_LT(fn_on, 0.05);
  EXPECT_EQ(RunCli("nest " + t + " --timeline-passes -1", &out), 2);
  EXPECT_NE(out.find("--timeline-passes"), std::string::npos) << out;
}

// The added-delay trace of section 7.3 (200 ms at WS2 between its calls to
// AUTH and AP): with the timeline the mean latencies of the correctly found
// patterns are within 1% of the truth (the issue asks 3%; the paper's
// scores alone leave 3.5% on this trace, because WS2's slow instances lend
// their AP calls to concurrent ones), and no false positive pattern is left.
TEST(NestCliTest, TimelinePassesKeepAddedDelayLatenciesExact) {
  TempDir dir;
  const std::string t = MakeSample(dir, "multitier-added-delay");
  auto off = NestAndEval(dir, t, "--timeline-passes 0", "off");
  auto on = NestAndEval(dir, t, "", "on");
  double lat_off = off["latency"]["relative_error_weighted"];
  double lat_on = on["latency"]["relative_error_weighted"];
  EXPECT_LT(lat_on, 0.01) << "without the timeline " << lat_off;
  EXPECT_LT(lat_on, lat_off);
  EXPECT_LE(on["patterns"]["inferred"].get<int>(),
            off["patterns"]["inferred"].get<int>());
  EXPECT_EQ(on["patterns"]["false_negatives"], 0);
}

// Clock skew of 0.5 to 1 ms on four nodes of the multi-tier trace (each
// message stamped by its sender's clock): with no flag, nest works out the
// clocks (and windows for what is left) and comes within one point of instance
// false negatives of the best of the hand-tuned windows a user could have
// picked; eval re-runs it in the automatic mode. On the unskewed trace the
// automatic mode finds no skew and gives exactly the answer of no window.
TEST(NestCliTest, DefaultSkewHandlingMatchesTheBestHandTunedWindow) {
  TempDir dir;
  const std::string t = MakeSample(dir, "multitier-normal");
  const std::string st = dir.File("skewed.bbt");
  std::string out;
  ASSERT_EQ(
      RunCli(
          "skewer " + t +
              " -q --offset WS1=-0.001 --offset WS2=0.0008 --offset AP2=-0.001"
              " --offset DB=0.0005 -o " +
              st,
          &out),
      0)
      << out;
  auto def = NestAndEval(dir, st, "", "auto");
  EXPECT_EQ(def["result_params"]["skew"], "auto");
  // Clocks are corrected: WS1 lags WS2 by 1.8 ms. The bounds of an edge
  // here span milliseconds (the sample's delays), so several hold 0 and the
  // correction is partial (docs/nesting.md, "What is reported, and the
  // limits"); it is in the right
  // direction, and windows do the rest.
  std::map<std::string, double> clock;
  for (const auto& c : def["result_params"]["clock_offsets"])
    clock[c["node"]] = c["offset_s"];
  ASSERT_TRUE(clock.count("WS1")) << def["result_params"].dump();
  EXPECT_LT(clock["WS1"] - clock["WS2"], -0.0005);
  const double fn_auto = def["instances"]["false_negative_rate"];
  double best = 1.0;
  std::string best_w;
  for (const char* w : {"0", "0.0001", "0.0003", "0.001", "0.003"}) {
    auto e = NestAndEval(dir, st, std::string("--skew-window ") + w,
                         std::string("w") + w);
    EXPECT_EQ(e["result_params"]["skew"], "fixed");
    const double fn = e["instances"]["false_negative_rate"];
    if (fn < best) {
      best = fn;
      best_w = w;
    }
  }
  EXPECT_LE(fn_auto, best + 0.01)
      << "automatic " << fn_auto << ", best window " << best_w << ": " << best;
  auto clean_auto = NestAndEval(dir, t, "", "clean-auto");
  auto clean_off = NestAndEval(dir, t, "--skew-window 0", "clean-off");
  EXPECT_TRUE(clean_auto["result_params"]["skew_windows"].empty());
  EXPECT_TRUE(clean_auto["result_params"]["clock_offsets"].empty());
  EXPECT_EQ(clean_auto["instances"], clean_off["instances"]);
}

// --assign fcfs, the first-come-first-served baseline, is recorded in the
// result and eval re-runs with it. On Children-parallel (B makes two
// parallel calls to C per request) it does worse than the model: when
// requests overlap, the oldest open request takes every call.
TEST(NestCliTest, FcfsBaselineIsRecordedAndWorseThanTheModel) {
  TempDir dir;
  const std::string t = MakeSample(dir, "children-parallel");
  auto fcfs = NestAndEval(dir, t, "--assign fcfs", "fcfs");
  auto model = NestAndEval(dir, t, "", "model");
  EXPECT_EQ(fcfs["result_params"]["assign"], "fcfs");
  EXPECT_EQ(model["result_params"]["assign"], "model");
  const double fn_fcfs = fcfs["instances"]["false_negative_rate"];
  const double fn_model = model["instances"]["false_negative_rate"];
  EXPECT_LT(fn_model, fn_fcfs) << "model " << fn_model << ", fcfs " << fn_fcfs;
  std::string out;
  EXPECT_EQ(RunCli("nest " + t + " --assign lifo", &out), 2);
  EXPECT_NE(out.find("--assign"), std::string::npos) << out;
}

// Asynchronous fan-in (samples/async-fanin.conf): COMPOSE calls STORE after
// the call that completed a post has returned, so no call encloses the
// store. The default finds the window that admits such parents from the
// trace, and the model then does far better than first come, first served
// and than the paper's algorithm.
TEST(NestCliTest, AsyncFanInIsNestedUnderAReturnedCall) {
  TempDir dir;
  const std::string t = MakeSample(dir, "async-fanin");
  auto model = NestAndEval(dir, t, "", "model");
  auto fcfs = NestAndEval(dir, t, "--assign fcfs", "fcfs");
  auto paper =
      NestAndEval(dir, t, "--refine-passes 0 --timeline-passes 0", "paper");
  bool store_window = false;
  for (const auto& e : model["result_params"]["skew_windows"]) {
    if (e["caller"] == "COMPOSE" && e["callee"] == "STORE") {
      store_window = e["end_window_s"].get<double>() > 0.002;
    }
  }
  EXPECT_TRUE(store_window) << model["result_params"].dump();
  const double fn = model["instances"]["false_negative_rate"];
  EXPECT_LT(fn, fcfs["instances"]["false_negative_rate"].get<double>() - 0.2);
  EXPECT_LT(fn, paper["instances"]["false_negative_rate"].get<double>() - 0.05);
}

// The grandchild term (docs/nesting.md, "Asynchronous servers"): a post's
// two parts each call STORE with probability 1/2 as the per-parent terms
// see them, yet every post has exactly one STORE. Scoring each post's count
// of STOREs against what independent parts would give keeps a second STORE
// off a post that has one. Measured on this trace (60,000 messages, seed
// 3): 30.4% instance false negatives without the term, 22.2% with it (seeds
// 1 and 2: 30.1% -> 23.5%, 30.2% -> 22.7%).
TEST(NestCliTest, AsyncFanInGetsOneStorePerPost) {
  TempDir dir;
  const std::string t = MakeSample(dir, "async-fanin");
  auto model = NestAndEval(dir, t, "", "model");
  EXPECT_LT(model["instances"]["false_negative_rate"].get<double>(), 0.26);
}

// Burst order (docs/nesting.md, "Burst order"): server S sends the three
// parts of each request to N back to back (30-80 us apart) after a
// queueing delay from its arrival that varies far more (exponential, mean
// 1 ms), with a request arriving every 1 ms on average. Measured from the
// arrival, the parts of requests that arrived close together look alike
// and trade places; measured from the previous part's call, they do not.
// Request accuracy on this trace: 31% scored from the anchor alone (the
// timeline before bursts), 68% with the bursts scored as chains.
TEST(NestCliTest, BurstsOfCallsOnOneEdgeKeepTheirRequest) {
  TempDir dir;
  std::mt19937_64 rng(7);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo +
           static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  auto exponential = [&](double mean) {
    const double u = static_cast<double>((rng() >> 11) + 1) * 0x1p-53;
    return static_cast<int64_t>(-mean * std::log(u));
  };
  struct Event {
    int64_t t;
    std::string line;
  };
  std::vector<Event> events;
  int64_t t = 1'000'000'000'000'000'000;
  int id = 0;
  for (int r = 0; r < 2000; ++r) {
    t += exponential(1e6);
    const std::string path = "r" + std::to_string(r);
    const std::string request = "c" + std::to_string(id++);
    events.push_back({t, "CALL\tclient\tS\t" + request + "\t" + path});
    int64_t call = t + exponential(1e6);
    int64_t last = 0;
    for (int i = 0; i < 3; ++i) {
      if (i > 0) call += uniform(30'000, 80'000);
      const std::string part = "c" + std::to_string(id++);
      const int64_t ret = call + uniform(1'000'000, 3'000'000);
      events.push_back({call, "CALL\tS\tN\t" + part + "\t" + path});
      events.push_back({ret, "RET\tN\tS\t" + part + "\t" + path});
      last = std::max(last, ret);
    }
    events.push_back({last + uniform(50'000, 150'000),
                      "RET\tS\tclient\t" + request + "\t" + path});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.t < b.t; });
  std::string text = "#bbprof-trace 1\n";
  char stamp[32];
  for (const Event& e : events) {
    std::snprintf(stamp, sizeof stamp, "%lld.%09lld\t",
                  static_cast<long long>(e.t / 1'000'000'000),
                  static_cast<long long>(e.t % 1'000'000'000));
    text += stamp + e.line + "\n";
  }
  const std::string trace = dir.Write("bursts.trace", text);
  auto eval = NestAndEval(dir, trace, "", "bursts");
  EXPECT_GT(eval["request_accuracy"].get<double>(), 0.5) << eval.dump();
}

// Two calls in opposite directions that enclose each other within the skew
// window (py -> node, and node's call back to py just inside it) must not
// become each other's parents: such a cycle hangs from no root, and both
// calls, with their request, vanished from the paths and the export (on a
// skewed capture of the real stack, 1157 of 2930 requests' calls back to py).
TEST(NestCliTest, CallsThatEncloseEachOtherInTheWindowMakeNoCycle) {
  TempDir dir;
  std::string trace = "#bbprof-trace 1\n";
  char line[160];
  for (int i = 0; i < 200; ++i) {
    const double t = 1000 + 0.01 * i;
    const int id = 3 * i + 1;
    const double back = 1e-6 * (20 + i % 20);  // node's call back to py
    const struct {
      double at;
      const char *kind, *from, *to;
      int callid;
    } events[] = {{t, "CALL", "client", "py", id},
                  {t + 0.001, "CALL", "py", "node", id + 1},
                  {t + 0.001 + back, "CALL", "node", "py", id + 2},
                  {t + 0.002 - back, "RET", "py", "node", id + 2},
                  {t + 0.002, "RET", "node", "py", id + 1},
                  {t + 0.003, "RET", "py", "client", id}};
    for (const auto& e : events) {
      std::snprintf(line, sizeof line, "%.9f\t%s\t%s\t%s\t%d\treq%d\n", e.at,
                    e.kind, e.from, e.to, e.callid, i);
      trace += line;
    }
  }
  const std::string t = dir.Write("cycle.trace", trace);
  std::string out;
  ASSERT_EQ(
      RunCli("nest " + t + " -q --skew-window 0.002 --json " +
                 dir.File("r.json") + " --requests " + dir.File("r.otlp.json"),
             &out),
      0)
      << out;
  auto j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(j["requests"]["calls"], 600) << j["requests"].dump();
  ASSERT_EQ(j["patterns"].size(), 1u) << j["patterns"].dump();
  EXPECT_EQ(j["patterns"][0]["signature"], "clients->py(node(py))");
}

TEST(NestCliTest, EmptyAndBadTracesFailClearly) {
  TempDir dir;
  std::string out;
  EXPECT_EQ(RunCli("nest " + dir.Write("e.trace", ""), &out), 1);
  EXPECT_NE(out.find("has no messages"), std::string::npos) << out;
  EXPECT_EQ(RunCli("nest " + dir.Write("m.trace", "0.0 MSG A B -\n"), &out), 1);
  EXPECT_NE(out.find("no CALL has a matching RET"), std::string::npos) << out;
  EXPECT_EQ(RunCli("nest " + dir.Write("b.trace", "0.0 CALLX A B 1\n"), &out),
            1);
  EXPECT_NE(out.find("b.trace:1"), std::string::npos) << out;
  EXPECT_EQ(RunCli("nest " + dir.File("missing.trace"), &out), 1);
}

TEST(NestCliTest, BadFlagsAreUsageErrors) {
  TempDir dir;
  std::string t = dir.Write("a.trace", kTrace);
  std::string out;
  EXPECT_EQ(RunCli("nest " + t + " --top -3", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --sort speed", &out), 2);
  EXPECT_NE(out.find("--sort"), std::string::npos);
  EXPECT_EQ(RunCli("nest " + t + " --bin-base 1", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --penalty-overlap abc", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --skew-window x", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --smooth -1", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --bogus", &out), 2);
}

// Issue 14: one node serving two operations (samples/two-operations.conf:
// `GET /slow/{n}` sleeps 40 ms more in app and queries nothing) gives two
// patterns with the 40 ms on app's own time; grouped by node only they
// merge; eval re-runs with the result's grouping, so a result and its
// re-run agree.
TEST(NestCliTest, OperationsSplitPatternsEndToEnd) {
  TempDir dir;
  const std::string t = dir.File("two.bbt");
  std::string out;
  ASSERT_EQ(RunCli("maketrace " + std::string(BBPROF_SOURCE_DIR) +
                       "/samples/two-operations.conf -q --duration 60s -o " + t,
                   &out),
            0)
      << out;
  ASSERT_EQ(RunCli("nest " + t + " -q --json " + dir.File("r.json"), &out), 0)
      << out;
  auto j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  ASSERT_EQ(j["patterns"].size(), 2u) << j["patterns"].dump();
  for (const auto& p : j["patterns"]) {
    const auto& app = p["root"]["children"][0];
    EXPECT_EQ(app["node"], "app");
    if (p["signature"] ==
        "clients->nginx[http:GET:/slow/{n}](app[http:GET:/slow/{n}])") {
      EXPECT_EQ(app["op"], "http:GET:/slow/{n}");
      EXPECT_NEAR(app["own_time_s"].get<double>(), 0.042, 0.002);
    } else {
      EXPECT_EQ(p["signature"],
                "clients->nginx[http:GET:/item/{n}](app[http:GET:/item/"
                "{n}](db[pg:SELECT:items]))");
      // 1 ms before the db call and 2 ms after its return.
      EXPECT_NEAR(app["own_time_s"].get<double>(), 0.003, 0.0005);
    }
  }
  auto ev = NestAndEval(dir, t, "", "op");
  EXPECT_EQ(ev["patterns"]["false_negatives"], 0);
  EXPECT_LT(ev["instances"]["false_negative_rate"].get<double>(), 0.01);

  ASSERT_EQ(
      RunCli("nest " + t + " -q --group-by node --json " + dir.File("n.json"),
             &out),
      0)
      << out;
  auto n = nlohmann::json::parse(ReadFile(dir.File("n.json")));
  // One pattern nginx(app) and one nginx(app(db)); no ops in signatures.
  ASSERT_EQ(n["patterns"].size(), 2u);
  EXPECT_EQ(n["params"]["group_by"], "node");
  for (const auto& p : n["patterns"]) {
    EXPECT_EQ(p["signature"].get<std::string>().find('['), std::string::npos);
  }
  auto evn = NestAndEval(dir, t, "--group-by node", "node");
  EXPECT_EQ(evn["patterns"]["false_negatives"], 0);

  // The picture shows each node's op under its name.
  ASSERT_EQ(RunCli("render " + dir.File("r.json") + " -o " + dir.File("pics") +
                       " --format dot",
                   &out),
            0)
      << out;
  EXPECT_NE(ReadFile(dir.File("pics/pattern-001.dot")).find("http:GET:"),
            std::string::npos);
}

// Issue 14: the many-client variant of multitier-normal (50 client
// addresses) gives the same 8 patterns as the single-client sample once
// clients are folded (the default); kept apart they multiply; grouped by
// /24 they are one block.
TEST(NestCliTest, ManyClientsFoldIntoTheSinglePatternSet) {
  TempDir dir;
  std::string out;
  auto patterns = [&](const std::string& trace, const std::string& flags) {
    EXPECT_EQ(RunCli("nest " + trace + " -q --json " + dir.File("p.json") +
                         " " + flags,
                     &out),
              0)
        << out;
    std::set<std::string> sigs;
    const auto doc = nlohmann::json::parse(ReadFile(dir.File("p.json")));
    for (const auto& p : doc["patterns"]) {
      sigs.insert(p["signature"].get<std::string>());
    }
    return sigs;
  };
  const std::string one = dir.File("one.bbt"), many = dir.File("many.bbt");
  for (const auto& [conf, t] : {std::pair{"multitier-normal", one},
                                std::pair{"multitier-many-clients", many}}) {
    ASSERT_EQ(
        RunCli("maketrace " + std::string(BBPROF_SOURCE_DIR) + "/samples/" +
                   conf + ".conf -q --duration 100s -o " + t,
               &out),
        0)
        << out;
  }
  const auto single = patterns(one, "");
  EXPECT_EQ(single.size(), 8u);
  EXPECT_EQ(patterns(many, ""), single);
  EXPECT_GT(patterns(many, "--clients keep").size(), 100u);
  std::set<std::string> blocks;
  for (const std::string& s : patterns(many, "--clients cidr:/24")) {
    blocks.insert(s.substr(0, s.find("->")));
  }
  EXPECT_EQ(blocks, std::set<std::string>{"10.9.0.0/24"});
  // Listed blocks: the first 15 addresses are one block, the rest fold.
  for (const std::string& s : patterns(many, "--clients cidr:10.9.0.0/28")) {
    blocks.insert(s.substr(0, s.find("->")));
  }
  EXPECT_EQ(blocks,
            (std::set<std::string>{"10.9.0.0/24", "10.9.0.0/28", "clients"}));
}

// The capture's naming at analysis time: --granularity host drops server
// ports, --names renames addresses, CIDR blocks and IP:ports; the same
// flags work for nest, stats and convolve.
TEST(NestCliTest, NamingFlagsRenameNodesAsTheTraceIsRead) {
  TempDir dir;
  const std::string t = dir.Write(
      "s.trace",
      "0.000 CALL 10.9.0.7 10.0.0.1:80 1\n0.001 CALL 10.0.0.1 10.0.0.2:5432 2\n"
      "0.0035 RET 10.0.0.2:5432 10.0.0.1 2\n0.004 RET 10.0.0.1:80 10.9.0.7 1\n"
      "0.010 MSG [2001:db8::1]:53 2001:db8::2 -\n");
  const std::string map =
      dir.Write("names.map", "10.0.0.1:80 web\n10.0.0.0/24 lan\n");
  std::string out;
  ASSERT_EQ(RunCli("nest " + t + " --json -", &out), 0) << out;
  // As captured at service granularity, web's own calls leave from its
  // address without a port: nest cannot see they are one node.
  EXPECT_NE(out.find("\"clients->10.0.0.1:80\""), std::string::npos) << out;
  ASSERT_EQ(RunCli("nest " + t + " --granularity host --json -", &out), 0)
      << out;
  EXPECT_NE(out.find("\"clients->10.0.0.1(10.0.0.2)\""), std::string::npos)
      << out;
  ASSERT_EQ(RunCli("nest " + t + " --names " + map + " --json -", &out), 0)
      << out;
  EXPECT_NE(out.find("\"clients->web\""), std::string::npos) << out;
  // An IP:PORT entry wins at host granularity too, as in capture.
  ASSERT_EQ(
      RunCli("nest " + t + " --granularity host --names " + map + " --json -",
             &out),
      0)
      << out;
  EXPECT_NE(out.find("\"clients->web\""), std::string::npos) << out;
  const std::string blocks = dir.Write("blocks.map", "10.0.0.0/24 lan\n");
  ASSERT_EQ(RunCli("nest " + t + " --granularity host --names " + blocks +
                       " --json -",
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("\"clients->lan(lan)\""), std::string::npos) << out;
  ASSERT_EQ(RunCli("stats " + t + " --granularity host --json -", &out), 0)
      << out;
  EXPECT_NE(out.find("\"2001:db8::1\""), std::string::npos) << out;
  EXPECT_EQ(out.find("[2001:db8::1]:53"), std::string::npos) << out;
  ASSERT_EQ(RunCli("convolve " + t + " --granularity host --json -", &out), 0)
      << out;
  EXPECT_NE(out.find("\"2001:db8::1\""), std::string::npos) << out;

  // IPv6 clients group by their own prefix length.
  const std::string v6 =
      dir.Write("v6.trace",
                "1 CALL 2001:db8:1:2::5 S 1\n2 RET S 2001:db8:1:2::5 1\n"
                "3 CALL 2001:db8:1:3::9 S 1\n4 RET S 2001:db8:1:3::9 1\n"
                "5 CALL 10.1.2.3 S 1\n6 RET S 10.1.2.3 1\n");
  ASSERT_EQ(RunCli("nest " + v6 + " --clients cidr:/16,/48 --json -", &out), 0)
      << out;
  EXPECT_NE(out.find("\"2001:db8:1::/48->S\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"10.1.0.0/16->S\""), std::string::npos) << out;
  ASSERT_EQ(
      RunCli("nest " + v6 + " --clients cidr:2001:db8:1:2::/64 --json -", &out),
      0)
      << out;
  EXPECT_NE(out.find("\"2001:db8:1:2::/64->S\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"clients->S\""), std::string::npos) << out;

  // Bad flags are usage errors (2); a names file that cannot be read or
  // parsed is bad input (1), named with its line.
  for (const char* bad :
       {"--group-by path", "--op-keys maybe", "--clients some",
        "--clients cidr:/33", "--clients cidr:10.0.0.0/40",
        "--clients cidr:", "--granularity port"}) {
    EXPECT_EQ(RunCli("nest " + t + " " + bad, &out), 2) << bad << ": " << out;
  }
  EXPECT_EQ(RunCli("stats " + t + " --granularity port", &out), 2) << out;
  EXPECT_EQ(RunCli("nest " + t + " --names " + dir.File("missing.map"), &out),
            1)
      << out;
  const std::string broken =
      dir.Write("broken.map", "10.0.0.1 web\nnot-an-address x\n");
  EXPECT_EQ(RunCli("convolve " + t + " --names " + broken, &out), 1) << out;
  EXPECT_NE(out.find("broken.map:2"), std::string::npos) << out;
}

// --threads: the trace is read ahead on a thread, the parent
// choice and the timeline passes run on parts that share no candidate, the
// timeline model's counts are summed over parts, and the pattern table's
// parts are stretches of roots merged in order, so every thread count
// gives the same bytes:
// the JSON and every request's parent. On samples (a high-parallelism one,
// where most calls share a component; a skewed, asynchronous one; ops keyed),
// on maketrace traces at several seeds with message loss, and under the
// flags that change the passes. A bad count is a usage error.
// Lines of a text trace built out of order, a seeded random source for
// them, and the trace they make (sorted by time, ties in the order added).
class TraceLines {
 public:
  explicit TraceLines(uint64_t seed) : x_(seed) {}
  uint64_t Rnd(uint64_t n) {
    x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x_ >> 33) % n;
  }
  // An exponential delay in nanoseconds (mean in nanoseconds).
  int64_t Exponential(double mean) {
    const double u = static_cast<double>(Rnd(1u << 30) + 1) * 0x1p-30;
    return static_cast<int64_t>(-mean * std::log(u));
  }
  // Fields after the timestamp, tab-separated.
  void Add(int64_t ns, const std::string& fields) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%lld.%09lld",
                  static_cast<long long>(1000000000 + ns / 1000000000),
                  static_cast<long long>(ns % 1000000000));
    lines_.push_back({ns, static_cast<int>(lines_.size()),
                      std::string(buf) + "\t" + fields});
  }
  std::string Text() {
    std::stable_sort(lines_.begin(), lines_.end(),
                     [](const Line& a, const Line& b) {
                       return a.ns != b.ns ? a.ns < b.ns : a.order < b.order;
                     });
    std::string text = "#bbprof-trace 1\n";
    for (const Line& l : lines_) text += l.text + "\n";
    return text;
  }

 private:
  struct Line {
    int64_t ns;
    int order;
    std::string text;
  };
  std::vector<Line> lines_;
  uint64_t x_;
};

// A text trace for ThreadsGiveTheSameResultAsOne that stresses pairing:
// client-facing front ends F0..F63 each call a back end B0..B3 per request,
// with numeric callids that repeat every 5 requests on a key, missing
// callids ("-") on every 7th, a return stamped 0.2 ms before its call on
// every 11th (sorted into the file before the CALL), and every 13th back-end
// return lost.
std::string PairingStressTrace() {
  TraceLines lines(12345);
  auto rnd = [&lines](uint64_t n) { return lines.Rnd(n); };
  auto add = [&](int64_t ns, const std::string& kind, const std::string& from,
                 const std::string& to, const std::string& id) {
    lines.Add(ns, kind + "\t" + from + "\t" + to + "\t" + id);
  };
  for (int r = 0; r < 3000; ++r) {
    const int64_t start = static_cast<int64_t>(r) * 150000 + rnd(100000);
    const std::string front = "F" + std::to_string(rnd(64));
    const std::string back = "B" + std::to_string(rnd(4));
    const std::string cid = std::to_string(r);
    const std::string bid =
        r % 7 == 0 ? "-" : std::to_string(r % 5);  // repeats, missing
    const int64_t call = start + 50000 + rnd(20000);
    const int64_t work = 100000 + rnd(300000);
    add(start, "CALL", "client", front, cid);
    add(call, "CALL", front, back, bid);
    if (r % 13 != 0) {
      add(r % 11 == 0 ? call - 200000 : call + work, "RET", back, front, bid);
    }
    add(call + work + 30000 + rnd(20000), "RET", front, "client", cid);
  }
  return lines.Text();
}

// A random text trace for the threads equivalence tests: `requests`
// requests from 40 clients into front ends F0..F7, each making 0-3 calls
// to back ends B0..B3 (some in parallel), with callids drawn from a small
// pool (they repeat on a key) or missing, ops on some calls (the RET
// carrying it or not), pathids, free messages, back-end returns lost with
// probability `lost` (they pile up as pending calls: a limit above them
// evicts) and returns stamped up to `early_ns` before their call (a slow
// callee clock).
std::string RandomPairingTrace(uint64_t seed, int requests, double lost,
                               int64_t early_ns) {
  TraceLines lines(seed * 0x9E3779B97F4A7C15ULL + 1);
  auto rnd = [&lines](uint64_t n) { return lines.Rnd(n); };
  auto chance = [&](double p) {
    return static_cast<double>(rnd(1000000)) < p * 1e6;
  };
  auto add = [&](int64_t ns, const std::string& kind, const std::string& from,
                 const std::string& to, const std::string& id,
                 const std::string& path, const std::string& op) {
    lines.Add(ns, kind + "\t" + from + "\t" + to + "\t" + id + "\t" + path +
                      "\t" + op);
  };
  const char* ops[] = {"-", "-", "http:GET:/a", "http:POST:/b", "sql:SELECT"};
  auto callid = [&]() {
    return chance(0.1) ? std::string("-") : std::to_string(rnd(50));
  };
  for (int r = 0; r < requests; ++r) {
    const int64_t start = static_cast<int64_t>(r) * 40000 + rnd(400000);
    const std::string client = "c" + std::to_string(rnd(40));
    const std::string front = "F" + std::to_string(rnd(8));
    const std::string path = "p" + std::to_string(r);
    const std::string cid = callid();
    const std::string op = ops[rnd(5)];
    int64_t t = start + 20000 + rnd(30000);
    const int children = static_cast<int>(rnd(4));
    for (int k = 0; k < children; ++k) {
      const std::string back = "B" + std::to_string(rnd(4));
      const std::string bid = callid();
      const std::string bop = ops[rnd(5)];
      const int64_t work = 50000 + rnd(400000);
      add(t, "CALL", front, back, bid, path, bop);
      if (!chance(lost)) {
        const int64_t ret =
            early_ns > 0 && chance(0.2)
                ? t - static_cast<int64_t>(rnd(static_cast<uint64_t>(early_ns)))
                : t + work;
        add(ret, "RET", back, front, bid, path, chance(0.5) ? bop : "-");
      }
      // Every third child runs in parallel with the next.
      t += k % 3 == 0 ? 10000 + rnd(20000) : work + 20000 + rnd(20000);
    }
    if (chance(0.05)) add(t, "MSG", front, "LOG", "-", path, "-");
    add(start, "CALL", client, front, cid, path, op);
    add(t + 10000 + rnd(30000), "RET", front, client, cid, path,
        chance(0.5) ? op : "-");
  }
  return lines.Text();
}

// Runs nest on each (trace, flags) with 1, 2 and 3 threads and expects the
// same bytes: the JSON, the text report and every request's parent (CSV).
// Where flags set --max-pending-calls, the run must evict (the limit is
// tested where it binds).
void ExpectSameOnAnyThreads(
    const TempDir& dir,
    const std::vector<std::pair<std::string, std::string>>& runs) {
  int k = 0;
  for (const auto& [trace, flags] : runs) {
    std::string one_json, one_requests, one_text;
    for (int threads : {1, 2, 3}) {
      const std::string json = dir.File("r" + std::to_string(k) + ".json");
      const std::string requests = dir.File("r" + std::to_string(k++) + ".csv");
      std::string out;
      ASSERT_EQ(RunCli("nest " + trace + " " + flags + " --threads " +
                           std::to_string(threads) + " --json " + json +
                           " --requests " + requests,
                       &out),
                0)
          << out;
      // The requests' path differs by file name; the rest must not.
      auto j = nlohmann::json::parse(ReadFile(json));
      j.erase("requests");
      if (threads == 1) {
        one_json = j.dump();
        one_requests = ReadFile(requests);
        one_text = out;
        EXPECT_FALSE(j["patterns"].empty()) << trace << " " << flags;
        // The stress cases do stress: the limit evicts.
        if (flags.find("--max-pending-calls") != std::string::npos) {
          EXPECT_GT(j["input"]["pending_calls_evicted"].get<int64_t>(), 0)
              << flags;
        }
        continue;
      }
      EXPECT_EQ(j.dump(), one_json)
          << trace << " " << flags << " --threads " << threads;
      EXPECT_EQ(ReadFile(requests), one_requests)
          << trace << " " << flags << " --threads " << threads;
      EXPECT_EQ(out, one_text)
          << trace << " " << flags << " --threads " << threads;
    }
  }
}

std::string GroupsTrace();  // below, with its test
std::string FanInTrace(uint64_t seed, double arrival, double busy,
                       int requests);  // below, with its test

TEST(NestCliTest, ThreadsGiveTheSameResultAsOne) {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> runs;  // trace, flags
  for (const char* name : {"multitier-parallelism-high", "children-parallel",
                           "async-fanin", "multitier-ops"}) {
    runs.emplace_back(MakeSample(dir, name), "");
  }
  runs.emplace_back(runs[3].first, "--op-keys on --clients keep");
  runs.emplace_back(runs[1].first, "--assign fcfs");
  runs.emplace_back(runs[1].first, "--skew-window 0.002 --smooth 2");
  runs.emplace_back(runs[0].first, "--timeline-passes 0 --refine-passes 3");
  // Lost messages and returns that never come: imputed returns, unmatched
  // calls.
  const std::string lossy = dir.Write(
      "lossy.conf",
      ReadFile(std::string(BBPROF_SOURCE_DIR) + "/samples/children-d-cc.conf") +
          "\nloss 0.01\nnoise timeout=0.005\n");
  for (int seed = 1; seed <= 3; ++seed) {
    const std::string t = dir.File("lossy" + std::to_string(seed) + ".bbt");
    std::string out;
    ASSERT_EQ(RunCli("maketrace " + lossy + " -q --messages 40000 --seed " +
                         std::to_string(seed) + " -o " + t,
                     &out),
              0)
        << out;
    runs.emplace_back(t, "");
  }
  runs.emplace_back(
      std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace", "");
  // Pairing under stress: many keys (64 callers), callids that repeat
  // (FIFO per key) or are missing, returns stamped before their call (a
  // slow callee clock, claimed under a skew window), lost returns, and a
  // pending-call limit that evicts (globally oldest first).
  const std::string stress = dir.Write("pairing.trace", PairingStressTrace());
  runs.emplace_back(stress, "");
  runs.emplace_back(stress, "--skew-window 0.0004");
  runs.emplace_back(stress, "--skew-window 0.0004 --max-pending-calls 6");
  runs.emplace_back(stress, "--max-pending-calls 3");
  // A batch read ahead with a few bytes of ids (the whole of this trace)
  // keeps them inside its string object, which moves between threads: the
  // records' views must follow (they once pointed into the reader thread's
  // copy, and nothing paired).
  runs.emplace_back(dir.Write("tiny.trace", kTrace), "");
  // Group swaps (their parents' parents' grandchildren are read too).
  runs.emplace_back(dir.Write("groups.trace", GroupsTrace()), "");
  // Fan-in order: its neighbours are read as each pass started.
  runs.emplace_back(dir.Write("fanin.trace", FanInTrace(17, 1e6, 1.2e5, 1500)),
                    "");
  ExpectSameOnAnyThreads(dir, runs);
  // The default is auto (the usable cores, at most 8): the bytes of one
  // thread, whatever this machine has.
  std::string out;
  const std::string one = dir.File("one.json"), dflt = dir.File("auto.json");
  ASSERT_EQ(
      RunCli("nest " + runs[0].first + " -q --threads 1 --json " + one, &out),
      0)
      << out;
  ASSERT_EQ(RunCli("nest " + runs[0].first + " -q --json " + dflt, &out), 0)
      << out;
  EXPECT_EQ(ReadFile(one), ReadFile(dflt));
  for (const char* bad : {"0", "257", "two", "2x", ""}) {
    EXPECT_EQ(
        RunCli("nest " + runs[0].first + " --threads '" + bad + "'", &out), 2)
        << bad << ": " << out;
    EXPECT_NE(out.find("--threads must be auto or between 1 and 256"),
              std::string::npos)
        << out;
  }
}

// The pattern table's parts (docs/nesting.md, "Passes and their state"):
// each stretch of roots adds its instances to patterns of its own,
// merged in order. Two shapes share one signature here (caller c into node
// "W->X", caller "c->W" into X: both "c->W->X"), so even one part merges
// two of its own patterns into one; every latency ties (2 ms, three of
// 3 ms, at 0.05 s, 3 s and 5.95 s), so the slowest must be the earliest of
// the equals wherever the parts cut, and the median the first root.
TEST(NestCliTest, PatternsOfEveryPartMergeAsOnePass) {
  TempDir dir;
  std::string text;
  for (int r = 0; r < 600; ++r) {
    const int64_t t = int64_t{r} * 10'000'000;
    const int64_t lat = r == 5 || r == 300 || r == 595 ? 3'000'000 : 2'000'000;
    const std::string from = r % 2 == 0 ? "c" : "c->W";
    const std::string to = r % 2 == 0 ? "W->X" : "X";
    const std::string id = " " + std::to_string(r) + "\n";
    auto seconds = [](int64_t ns) {
      std::string frac = std::to_string(ns % 1'000'000'000);
      return std::to_string(ns / 1'000'000'000) + "." +
             std::string(9 - frac.size(), '0') + frac;
    };
    text += seconds(t) + " CALL " + from + " " + to + id;
    text += seconds(t + lat) + " RET " + to + " " + from + id;
  }
  const std::string trace = dir.Write("ties.trace", text);
  for (int threads : {1, 2, 3}) {
    const std::string json = dir.File("t" + std::to_string(threads) + ".json");
    std::string out;
    ASSERT_EQ(RunCli("nest " + trace + " -q --clients keep --threads " +
                         std::to_string(threads) + " --json " + json,
                     &out),
              0)
        << out;
    const auto j = nlohmann::json::parse(ReadFile(json));
    ASSERT_EQ(j["patterns"].size(), 1u) << j.dump();
    const auto& pat = j["patterns"][0];
    EXPECT_EQ(pat["signature"], "c->W->X");
    EXPECT_EQ(pat["count"], 600);
    EXPECT_DOUBLE_EQ(pat["examples"]["slowest"]["at_s"].get<double>(), 0.05)
        << threads;
    EXPECT_DOUBLE_EQ(pat["examples"]["median"]["at_s"].get<double>(), 0.0)
        << threads;
  }
}

// Random traces (RandomPairingTrace) through nest on 1, 2 and 3 threads:
// the parent choice, the timeline passes and the pattern table split over
// components, parents and roots (docs/nesting.md, "Passes and their
// state"), on traces whose pairing is hard (repeated and missing callids,
// lost returns, a pending-call limit that binds mid-trace), so that a
// driver that also splits pairing (the branch `pair` did, by key hash) is
// held to the same bytes. Under a skew window, returns stamped before their
// call are claimed; under --skew-window auto, clocks are corrected.
TEST(NestCliTest, RandomTracesGiveTheSameResultOnAnyThreads) {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> runs;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const std::string t =
        dir.Write("random" + std::to_string(seed) + ".trace",
                  RandomPairingTrace(seed, 7000, 0.55, seed == 1 ? 0 : 400000));
    runs.emplace_back(t, "-q");
    runs.emplace_back(t, "-q --max-pending-calls 4096");
    runs.emplace_back(t, "-q --max-pending-calls 5000 --skew-window 0.0003");
    if (seed == 1) {
      runs.emplace_back(t, "-q --skew-window auto --op-keys on");
      runs.emplace_back(t, "-q --assign fcfs --max-pending-calls 4500");
    }
  }
  ExpectSameOnAnyThreads(dir, runs);
}

// Return order (docs/nesting.md, "Burst order"): server S sends the three
// parts of each request to N, each after its own queueing delay from the
// arrival (exponential, mean 0.5 ms); N holds a request's parts until the
// last has arrived, works on them for a time that varies far more
// (exponential, mean 1 ms), and answers all three within 40 us, with a
// request arriving every 1 ms on average. Each part's duration says little
// of its parent, and the gap from the arrival little more; that the
// parts of one request return together says much. Request accuracy on
// this trace: 67% with every child's duration taken as given, 96% with
// the returns scored as chains.
TEST(NestCliTest, ReturnsOfOneParentInOrderKeepTheirRequest) {
  TempDir dir;
  TraceLines lines(11);
  int64_t t = 0;
  int id = 0;
  for (int r = 0; r < 2000; ++r) {
    t += lines.Exponential(1e6);
    const std::string path = "\tr" + std::to_string(r);
    const std::string request = std::to_string(id++);
    lines.Add(t, "CALL\tclient\tS\t" + request + path);
    int64_t calls[3];
    for (int64_t& call : calls) call = t + lines.Exponential(5e5);
    const int64_t answer =
        *std::max_element(calls, calls + 3) + lines.Exponential(1e6);
    int64_t last = 0;
    for (int64_t call : calls) {
      const std::string part = std::to_string(id++);
      const int64_t ret = answer + static_cast<int64_t>(lines.Rnd(40'000));
      lines.Add(call, "CALL\tS\tN\t" + part + path);
      lines.Add(ret, "RET\tN\tS\t" + part + path);
      last = std::max(last, ret);
    }
    lines.Add(last + 50'000 + static_cast<int64_t>(lines.Rnd(100'000)),
              "RET\tS\tclient\t" + request + path);
  }
  const std::string trace = dir.Write("returns.trace", lines.Text());
  auto eval = NestAndEval(dir, trace, "", "returns");
  EXPECT_GT(eval["request_accuracy"].get<double>(), 0.85) << eval.dump();
}

// Group swaps and group order (docs/nesting.md, "Group swaps"): server S
// takes requests first in, first out, one at a time (a request every 2 ms,
// each holding S for 1 ms on average, exponential), and starts each by
// sending its three parts to N back to back; N answers a request's parts
// together after a varied delay. The queueing before S starts a request
// varies from nothing to milliseconds, so the gap from the arrival places
// a group of parts no better under its own request than under one that
// came just before or after it: the parts of one request stay together
// (their returns are chained), but which request holds them is left to
// chance, and no move of one part can change it. Trading whole groups, and
// scoring their order against the order of the arrivals, can: request
// accuracy 74.6% without, 88.9% with, 91.9% with the passes added for
// chained edges.
// A first-in, first-out server S fanning out to N (the traces of the two
// tests below): 2000 requests, each starting after the previous one has
// held S for `busy` ns on average (exponential). A compose sends three
// parts back to back, answered together; with `items`, half the requests
// are items with one price call instead. `key_at` < 0: no ops; otherwise
// ops with a key of ten values in the route, 0 none, 1 at its end, 2
// before its last segment (/k3/part).
std::string FanOutTrace(uint64_t seed, double arrival, double busy, bool items,
                        int key_at) {
  TraceLines lines(seed);
  int64_t t = 0, free_at = 0;
  int id = 0;
  for (int r = 0; r < 2000; ++r) {
    t += lines.Exponential(arrival);
    const std::string key = "/k" + std::to_string(r % 10);
    auto op = [&](const std::string& method, const std::string& name) {
      if (key_at < 0) return std::string();
      return "\thttp:" + method + ":" +
             (key_at == 0   ? "/" + name
              : key_at == 1 ? "/" + name + key
                            : key + "/" + name);
    };
    const bool compose = !items || lines.Rnd(2) == 0;
    const std::string path = "\tr" + std::to_string(r);
    const std::string request = std::to_string(id++);
    lines.Add(t, "CALL\tclient\tS\t" + request + path +
                     op("GET", compose ? "compose" : "item"));
    int64_t call = std::max(t, free_at) + 20'000;
    free_at = call + lines.Exponential(busy);
    const int64_t answer = call + 300'000 + lines.Exponential(5e5);
    int64_t last = 0;
    for (int k = 0; k < (compose ? 3 : 1); ++k) {
      const std::string part = std::to_string(id++);
      const int64_t ret = compose
                              ? answer + static_cast<int64_t>(lines.Rnd(40'000))
                              : call + lines.Exponential(4e5) + 50'000;
      lines.Add(call, "CALL\tS\tN\t" + part + path +
                          op("POST", compose ? "part" : "price"));
      lines.Add(ret, "RET\tN\tS\t" + part + path);
      last = std::max(last, ret);
      call += 30'000 + static_cast<int64_t>(lines.Rnd(100'000));
    }
    lines.Add(last + lines.Exponential(2e5) + 10'000,
              "RET\tS\tclient\t" + request + path);
  }
  return lines.Text();
}

std::string GroupsTrace() { return FanOutTrace(5, 2e6, 1e6, false, -1); }

TEST(NestCliTest, GroupsOfPartsGoToTheRequestsInTheirOrder) {
  TempDir dir;
  const std::string trace = dir.Write("groups.trace", GroupsTrace());
  auto eval = NestAndEval(dir, trace, "", "groups");
  EXPECT_GT(eval["request_accuracy"].get<double>(), 0.83) << eval.dump();
}

// Fan-in order (docs/nesting.md, "Fan-in order"): server S sends the
// three parts of each request to N back to back; N, one event loop,
// handles its events (the parts' arrivals, A's answers) one at a time in
// the order they arrive, each taking `busy` ns on average (exponential).
// Handling a request's last part calls A; handling A's answer answers the
// three parts within 40 us. With a request every 1 ms and 0.12 ms per
// event (four events a request: the loop is busy half the time) the loop
// lags its input by up to milliseconds, so several requests' groups are
// complete and open when a call to A is made, and the gap from a group's
// last arrival to its call is heavy-tailed: the order in which the groups
// completed, which the loop keeps, tells more, and so does measuring each
// call's gap from its group's last arrival rather than from whichever part
// holds it. Request accuracy at seeds 17 and 18: 71.7% and 72.7% with
// neither, 76.3% and 76.5% with the order terms alone, 75.2% and 75.9%
// with the group's arrival alone, 79.9% and 80.2% with both. (What is
// left wrong is mostly runs of calls to A each given to the next group:
// they keep the order, and no move of one call can shift a whole run
// back.)
std::string FanInTrace(uint64_t seed, double arrival, double busy,
                       int requests) {
  TraceLines lines(seed);
  struct Event {
    int64_t at;
    int request;
    bool answer;  // A's answer (else a part's arrival)
    bool operator>(const Event& o) const {
      return at != o.at ? at > o.at : request > o.request;
    }
  };
  std::vector<Event> queue;  // a min-heap by time
  auto push = [&](Event e) {
    queue.push_back(e);
    std::push_heap(queue.begin(), queue.end(), std::greater<>());
  };
  std::vector<int> arrived(static_cast<size_t>(requests), 0);
  std::vector<std::string> path(static_cast<size_t>(requests));
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(requests));
  int64_t t = 0;
  int id = 0;
  for (int r = 0; r < requests; ++r) {
    t += lines.Exponential(arrival);
    path[r] = "\tr" + std::to_string(r);
    const std::string request = std::to_string(id++);
    lines.Add(t, "CALL\tclient\tS\t" + request + path[r]);
    int64_t call = t + 20'000 + lines.Exponential(1e5);
    for (int k = 0; k < 3; ++k) {
      parts[r].push_back(std::to_string(id++));
      lines.Add(call, "CALL\tS\tN\t" + parts[r].back() + path[r]);
      push({call + 10'000, r, false});
      call += 30'000 + static_cast<int64_t>(lines.Rnd(100'000));
    }
    parts[r].push_back(request);  // the request's own id, last
  }
  int64_t free_at = 0;
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), std::greater<>());
    const Event e = queue.back();
    queue.pop_back();
    free_at = std::max(free_at, e.at) + lines.Exponential(busy);
    const std::string& p = path[e.request];
    if (!e.answer) {
      if (++arrived[e.request] < 3) continue;
      const std::string call = std::to_string(id++);
      const int64_t done = free_at + 50'000 + lines.Exponential(5e4);
      lines.Add(free_at, "CALL\tN\tA\t" + call + p);
      lines.Add(done, "RET\tA\tN\t" + call + p);
      push({done + 10'000, e.request, true});
      continue;
    }
    int64_t last = 0;
    for (int k = 0; k < 3; ++k) {
      const int64_t ret = free_at + static_cast<int64_t>(lines.Rnd(40'000));
      lines.Add(ret, "RET\tN\tS\t" + parts[e.request][k] + p);
      last = std::max(last, ret);
    }
    lines.Add(last + 30'000 + lines.Exponential(1e5),
              "RET\tS\tclient\t" + parts[e.request][3] + p);
  }
  return lines.Text();
}

TEST(NestCliTest, FanInCallsFollowTheOrderTheirGroupsCompleted) {
  TempDir dir;
  for (uint64_t seed : {17, 18}) {
    const std::string tag = "fanin" + std::to_string(seed);
    const std::string trace =
        dir.Write(tag + ".trace", FanInTrace(seed, 1e6, 1.2e5, 3000));
    auto eval = NestAndEval(dir, trace, "", tag);
    EXPECT_GT(eval["request_accuracy"].get<double>(), 0.78)
        << seed << ": " << eval.dump();
  }
}

// The counterpart (docs/nesting.md, "Fan-in order"): a scatter-gather.
// S sends the three parts of each request to N back to back, as above,
// but each part calls DB on its own after a queueing delay (exponential,
// mean `queue` ns) and N answers it when that call returns: one call per
// member, none waiting for the group. Timed from the group's last
// arrival, as fan-in members are, these calls lose what their own
// arrival says: request accuracy 66.8% with every chained group's members
// so timed, 70.0% with fan-in kept to groups that make fewer calls than
// they have members, as the engine keeps it.
std::string ScatterTrace(uint64_t seed, double queue, int requests) {
  TraceLines lines(seed);
  int64_t t = 0;
  int id = 0;
  for (int r = 0; r < requests; ++r) {
    t += lines.Exponential(1e6);
    const std::string path = "\tr" + std::to_string(r);
    const std::string request = std::to_string(id++);
    lines.Add(t, "CALL\tclient\tS\t" + request + path);
    int64_t call = t + 20'000 + lines.Exponential(1e5), last = 0;
    for (int k = 0; k < 3; ++k) {
      const std::string part = std::to_string(id++);
      const std::string db = std::to_string(id++);
      lines.Add(call, "CALL\tS\tN\t" + part + path);
      const int64_t start = call + 10'000 + lines.Exponential(queue);
      const int64_t done = start + 50'000 + lines.Exponential(2e5);
      const int64_t ret = done + 20'000 + lines.Exponential(3e4);
      lines.Add(start, "CALL\tN\tDB\t" + db + path);
      lines.Add(done, "RET\tDB\tN\t" + db + path);
      lines.Add(ret, "RET\tN\tS\t" + part + path);
      last = std::max(last, ret);
      call += 30'000 + static_cast<int64_t>(lines.Rnd(100'000));
    }
    lines.Add(last + 30'000 + lines.Exponential(1e5),
              "RET\tS\tclient\t" + request + path);
  }
  return lines.Text();
}

TEST(NestCliTest, ScatterGatherMembersKeepTheirOwnArrival) {
  TempDir dir;
  const std::string trace =
      dir.Write("scatter.trace", ScatterTrace(7, 6e5, 3000));
  auto eval = NestAndEval(dir, trace, "", "scatter");
  EXPECT_GT(eval["request_accuracy"].get<double>(), 0.685) << eval.dump();
}

// Ids in routes (docs/nesting.md, "Operations"): server S serves two
// operations on one edge to N: a compose sends three parts (answered
// together), an item one price call. Routes carry a key of ten values
// (/part/k0 ... /part/k9), as the real stack's do. Keyed by every variant,
// each board and timeline edge holds a tenth of its samples; the variants
// of one stem key as one. Request accuracy without keys: 82.5% with
// node-keyed boards (--op-keys off), 96.8% keyed by operation; with keys,
// 87.1% keyed by every variant. S passes its key on to N (/item/k7 asks
// /price/k7), so with the variants as one and their ids shared
// (LearnSharedIds in nesting/timeline/timeline.cc) the keyed trace does better than
// the same trace with the keys taken out (99.9% against 96.8%), wherever in
// the route the key sits.
// `key`: 0 none, 1 at the end of each route, 2 before its last segment
// (/k3/part).
std::string TwoOpsTrace(int key_at) {
  return FanOutTrace(9, 1.5e6, 6e5, true, key_at);
}

TEST(NestCliTest, IdsInRoutesKeyAsOneOperation) {
  TempDir dir;
  auto plain =
      NestAndEval(dir, dir.Write("plain.trace", TwoOpsTrace(0)), "", "plain");
  EXPECT_EQ(plain["result_params"]["op_keys"], true);  // the default
  EXPECT_GT(plain["request_accuracy"].get<double>(), 0.9) << plain.dump();
  std::vector<double> keyed_accuracy;
  for (int key_at : {1, 2}) {
    const std::string tag = "keyed" + std::to_string(key_at);
    auto keyed = NestAndEval(
        dir, dir.Write(tag + ".trace", TwoOpsTrace(key_at)), "", tag);
    keyed_accuracy.push_back(keyed["request_accuracy"].get<double>());
    EXPECT_GE(keyed_accuracy.back(),
              plain["request_accuracy"].get<double>() + 0.02)
        << key_at << ": " << keyed.dump() << "\n"
        << plain.dump();
  }
  EXPECT_EQ(keyed_accuracy[0], keyed_accuracy[1]);
}

}  // namespace
