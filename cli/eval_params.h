// The engine parameters a `bbprof nest` result records ("params",
// shared/spec/results-json.md), read back by `bbprof eval` so that the truth
// is worked out with the settings the result was made with. Every value is
// checked as nest checks its flags (types, ranges): a forged or damaged
// result is refused with a message, never read into undefined behaviour.
#ifndef BBPROF_CLI_EVAL_PARAMS_H_
#define BBPROF_CLI_EVAL_PARAMS_H_

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "nesting/nesting.h"

namespace bbprof::cli {

// `result` must be a JSON object (ValidateResult has run). Errors read
// `bad "params": ...`, without the file name.
Result<nesting::Params> ReadResultParams(const nlohmann::json& result);

}  // namespace bbprof::cli

#endif  // BBPROF_CLI_EVAL_PARAMS_H_
