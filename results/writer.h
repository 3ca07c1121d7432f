// Output of a nesting result: the result JSON of shared/spec/results-json.md
// (the contract that render, eval and user scripts read) and a readable text
// report with the information of the paper's Figure 8.
#ifndef BBPROF_RESULTS_WRITER_H_
#define BBPROF_RESULTS_WRITER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nesting/nesting.h"

namespace bbprof::nesting {

// `patterns` already ranked, filtered and cut to --top.
nlohmann::ordered_json ResultToJson(const NestingResult& result);

// One block per pattern: rank, count, total and mean latency, then the call
// tree indented, each node with its mean latency, mean call delay and own
// time (latency not accounted for by its children), and the node that adds
// the most own time named on top.
std::string ResultToText(const NestingResult& result);

// The node of a pattern that adds the most absolute time: the largest mean
// own time (OwnTimeSeconds), the first in depth-first order among equals.
struct Culprit {
  const PatternNode* node = nullptr;
  std::vector<size_t> path;  // child indices from the root; empty = root
  double own_time_s = 0;     // its mean own time per instance
  double added_s = 0;        // own_time_s x the pattern's count
};
Culprit FindCulprit(const Pattern& pattern);

// Own time of a pattern node, from means: its mean latency minus the time
// covered by its children, where children are laid on the timeline at their
// mean call delay for their mean latency and overlapping (parallel) children
// are counted once (the union of their intervals).
double OwnTimeSeconds(const PatternNode& node);

}  // namespace bbprof::nesting

#endif  // BBPROF_RESULTS_WRITER_H_
