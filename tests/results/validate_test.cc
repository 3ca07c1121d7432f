// ValidateResult: the one check of a result document (spec/results-json.md)
// that render and eval run before using it, so that render never draws a
// malformed result and exits 0.
#include "results/validate.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/util/temp_dir.h"
#include "tests/viz/test_data.h"

namespace bbprof::viz {
namespace {

std::string ErrorOf(const nlohmann::json& doc) {
  Status s = ValidateResult(doc);
  return s.ok() ? "" : s.message();
}

TEST(ResultJsonTest, WellFormedResultsPass) {
  for (const char* f :
       {"nest.json", "convolve.json", "special.json", "empty.json"}) {
    EXPECT_EQ(ErrorOf(Load(f)), "") << f;
  }
}

TEST(ResultJsonTest, MalformedNestResultsNameTheirJsonPath) {
  nlohmann::json doc = Load("nest.json");
  doc["patterns"][1]["count"] = -3;
  EXPECT_EQ(ErrorOf(doc),
            "patterns[1].count: negative (expected an integer >= 0)");

  doc = Load("nest.json");
  doc["patterns"][0]["rank"] = 0;
  EXPECT_EQ(ErrorOf(doc),
            "patterns[0].rank: too small (expected an integer >= 1)");

  // Durations measured across two clocks (a skewed trace) may be negative.
  doc = Load("nest.json");
  doc["patterns"][0]["root"]["latency_s"]["mean"] = -0.5;
  doc["patterns"][0]["root"]["children"][0]["own_time_s"] = -0.001;
  doc["patterns"][0]["total_latency_s"] = -1;
  EXPECT_EQ(ErrorOf(doc), "");
  doc["patterns"][0]["root"]["latency_s"]["mean"] = "long";
  EXPECT_EQ(ErrorOf(doc),
            "patterns[0].root.latency_s.mean: wrong type (expected a number)");

  doc = Load("nest.json");
  doc["patterns"][0]["root"]["children"][0]["own_time_s"] = nullptr;
  EXPECT_EQ(ErrorOf(doc),
            "patterns[0].root.children[0].own_time_s: wrong type (expected a "
            "number)");

  doc = Load("nest.json");
  doc["patterns"][0]["root"]["children"][0].erase("call_delay_s");
  EXPECT_EQ(ErrorOf(doc),
            "patterns[0].root.children[0].call_delay_s: missing (expected an "
            "object)");

  doc = Load("nest.json");
  doc["patterns"][0]["root"]["call_delay_s"] = nlohmann::json::object();
  EXPECT_EQ(ErrorOf(doc),
            "patterns[0].root.call_delay_s.mean: missing (expected a number)");

  doc = Load("nest.json");
  doc["patterns"][0]["root"]["latency_s"]["p99"] = "slow";
  EXPECT_EQ(ErrorOf(doc),
            "patterns[0].root.latency_s.p99: wrong type (expected a number)");
}

TEST(ResultJsonTest, MalformedConvolveResultsNameTheirJsonPath) {
  nlohmann::json doc = Load("convolve.json");
  doc.erase("paths");
  EXPECT_EQ(ErrorOf(doc), "paths: missing (expected an array)");

  doc = Load("convolve.json");
  doc["paths"][0]["delays_s"].push_back(0.1);
  EXPECT_EQ(ErrorOf(doc),
            "paths[0].delays_s: 3 delays for 3 hops (expected one per hop "
            "after the first: 2)");

  doc = Load("convolve.json");
  doc["paths"][0]["delays_s"][1] = -0.25;
  EXPECT_EQ(ErrorOf(doc),
            "paths[0].delays_s[1]: negative (expected a non-negative number of "
            "seconds)");

  doc = Load("convolve.json");
  doc["edges"][0]["count"] = -1;
  EXPECT_EQ(ErrorOf(doc),
            "edges[0].count: negative (expected an integer >= 0)");

  doc = Load("convolve.json");
  doc["edges"][0]["delays"][0]["delay_s"] = -2;
  EXPECT_EQ(ErrorOf(doc),
            "edges[0].delays[0].delay_s: negative (expected a non-negative "
            "number of seconds)");

  doc = Load("convolve.json");
  doc["paths"][0]["nodes"] = nlohmann::json::array();
  EXPECT_EQ(ErrorOf(doc), "paths[0].nodes: empty (expected a non-empty array)");
}

}  // namespace
}  // namespace bbprof::viz
