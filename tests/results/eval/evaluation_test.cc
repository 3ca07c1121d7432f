#include "results/eval/evaluation.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/util/temp_dir.h"

namespace bbprof::nesting {
namespace {

using bbprof::testing::TempDir;

// Two requests through A -> B, one call B -> C. Of the two open calls, the
// later, closer one wins C's call (DensityScoringPrefersTheDenserDelay).
constexpr const char* kTwoRequests =
    "0.0 CALL A B p1 r1\n0.1 CALL A B p2 r2\n0.2 CALL B C c %s\n"
    "0.3 RET C B c %s\n0.4 RET B A p1 r1\n0.5 RET B A p2 r2\n";

std::string TwoRequests(const std::string& child_path) {
  char buf[256];
  std::snprintf(buf, sizeof buf, kTwoRequests, child_path.c_str(),
                child_path.c_str());
  return buf;
}

TEST(RequestAccuracy, EveryCallUnderItsTrueParent) {
  TempDir dir;
  auto ev = Evaluate(dir.Write("t.trace", TwoRequests("r2")), Params{},
                     EvalOptions{});
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->requests, 2u);
  EXPECT_EQ(ev->requests_correct, 2u);
  EXPECT_DOUBLE_EQ(ev->request_accuracy, 1.0);
}

TEST(RequestAccuracy, AMisplacedCallSpoilsItsRequestAndTheOneItJoined) {
  TempDir dir;
  // C's call truly belongs to r1, but nest puts it under p2 (request r2):
  // r1 lost a call and r2 gained one, so neither tree is right.
  auto ev = Evaluate(dir.Write("t.trace", TwoRequests("r1")), Params{},
                     EvalOptions{});
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->requests, 2u);
  EXPECT_EQ(ev->requests_correct, 0u);
  EXPECT_DOUBLE_EQ(ev->request_accuracy, 0.0);
  auto j = EvaluationToJson(*ev);
  EXPECT_EQ(j["requests"]["total"], 2);
  EXPECT_EQ(j["requests"]["correct"], 0);
  EXPECT_EQ(j["request_accuracy"], 0.0);
  EXPECT_NE(EvaluationToText(*ev).find("requests:       2, 0 right: request "
                                       "accuracy 0.00%"),
            std::string::npos);
}

TEST(RequestAccuracy, CallsWithoutPathidAreNotScored) {
  TempDir dir;
  // B's call to D (a cache: no header to carry the id) has no pathid; the
  // requests are counted by the calls that carry one.
  auto ev = Evaluate(dir.Write("t.trace",
                               "0.0 CALL A B p1 r1\n0.05 CALL B D x -\n"
                               "0.06 RET D B x -\n0.1 CALL B C c r1\n"
                               "0.2 RET C B c r1\n0.4 RET B A p1 r1\n"
                               "0.5 CALL A B p2 r2\n0.6 RET B A p2 r2\n"),
                     Params{}, EvalOptions{});
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->requests, 2u);
  EXPECT_EQ(ev->requests_correct, 2u);
}

TEST(RequestAccuracy, AnyOpenCallOfTheSameRequestIsARightParent) {
  TempDir dir;
  // A fan-in: two calls of request r1 are open at B when B calls C; the
  // pathids cannot say which one caused it, so either is right.
  auto ev = Evaluate(dir.Write("t.trace",
                               "0.0 CALL A B p1 r1\n0.1 CALL A B p2 r1\n"
                               "0.2 CALL B C c r1\n0.3 RET C B c r1\n"
                               "0.4 RET B A p1 r1\n0.5 RET B A p2 r1\n"),
                     Params{}, EvalOptions{});
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->requests, 1u);
  EXPECT_EQ(ev->requests_correct, 1u);
}

CallInfo Call(trace::NodeId caller, trace::NodeId callee, uint64_t pathid,
              uint32_t parent) {
  CallInfo c;
  c.matched = true;
  c.caller = caller;
  c.callee = callee;
  c.pathid = pathid;
  c.parent = parent;
  return c;
}

// Requests and right requests under one assignment of parents.
std::pair<uint64_t, uint64_t> Score(const std::vector<CallInfo>& truth,
                                    const std::vector<uint32_t>& parents) {
  Evaluation e;
  ScoreRequestTrees(truth, parents, &e);
  return {e.requests, e.requests_correct};
}

using Scored = std::pair<uint64_t, uint64_t>;

TEST(RequestAccuracy, TheIdsNotTheCheatingRunsClocksJudgeACall) {
  // Nodes 0 (client), 1, 2. Request 7: 0 -> 1, then 1 -> 2. On a skewed
  // capture the cheating run may fail to nest 1 -> 2 under 0 -> 1 (its
  // parent kNoParent here): the request still reaches node 1 by an id, so
  // the call belongs under that call, whatever the clocks said.
  const std::vector<CallInfo> truth = {Call(0, 1, 7, kNoParent),
                                       Call(1, 2, 7, kNoParent)};
  EXPECT_EQ(Score(truth, {kNoParent, 0}), Scored(1, 1));
  EXPECT_EQ(Score(truth, {kNoParent, kNoParent}), Scored(1, 0));
}

TEST(RequestAccuracy, AnEntryCallKeepsTheCheatingRunsParentWithoutAnId) {
  // A client that sends no id (call 0, pathid 0); node 1 adds one on its
  // call to node 2. Request 9 reaches node 1 by no call with an id, so only
  // the cheating run can say that call 1's parent is call 0; the request
  // counts all the same.
  const std::vector<CallInfo> truth = {Call(0, 1, 0, kNoParent),
                                       Call(1, 2, 9, 0)};
  EXPECT_EQ(Score(truth, {kNoParent, 0}), Scored(1, 1));
  EXPECT_EQ(Score(truth, {kNoParent, kNoParent}), Scored(1, 0));
}

TEST(RequestAccuracy, AParentMustBeACallIntoTheCaller) {
  // Request 5 reaches node 1 twice: 0 -> 1 (call 0) and, through node 3,
  // 3 -> 1 (call 2). Call 3 (1 -> 2) is right under either, never under
  // call 1, a call of the same request into another node.
  const std::vector<CallInfo> truth = {Call(0, 1, 5, kNoParent),
                                       Call(0, 3, 5, kNoParent),
                                       Call(3, 1, 5, 1), Call(1, 2, 5, 0)};
  EXPECT_EQ(Score(truth, {kNoParent, kNoParent, 1, 0}), Scored(1, 1));
  EXPECT_EQ(Score(truth, {kNoParent, kNoParent, 1, 2}), Scored(1, 1));
  EXPECT_EQ(Score(truth, {kNoParent, kNoParent, 1, 1}), Scored(1, 0));
}

}  // namespace
}  // namespace bbprof::nesting
