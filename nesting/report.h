// Output of the nesting engine: the result JSON of
// shared/spec/results-json.md ("Nesting result") and a readable text report.
#ifndef BBPROF_NESTING_REPORT_H_
#define BBPROF_NESTING_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "nesting/nest.h"

namespace bbprof::nesting {

// The result document; patterns in their current (ranked) order.
nlohmann::ordered_json ResultToJson(const NestResult& result);

// One block per pattern: count and total latency, an indented call tree with
// mean latency and mean call delay per node, and the node that adds the most
// own time (latency minus the union of its children's calls).
std::string ResultToText(const NestResult& result);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_REPORT_H_
