// libFuzzer target for the result-JSON reader every consumer of results runs
// first (results/validate.h: `render`, `eval` and the report): the document
// parsed as `eval` parses it, then ValidateResult. The validator must never
// throw (nlohmann::json's type errors included) and a refusal names a JSON
// path ("$" or a field).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "results/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return -1;  // not JSON: nlohmann's, not ours
  Status s = viz::ValidateResult(doc);
  if (!s.ok()) FUZZ_CHECK(!s.message().empty(), "empty error");
  return 0;
}
