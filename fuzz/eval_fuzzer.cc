// libFuzzer target for what `bbprof eval` reads of a result document before
// it scores anything: the JSON parsed as eval parses it, the shared reader
// (viz::ValidateResult), then the engine parameters the result records
// (cli/eval_params.h), which must come back as values or as an error,
// never as undefined behaviour (a pass count of 1e300 once was).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cli/eval_params.h"
#include "fuzz/fuzz_util.h"
#include "results/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return -1;
  if (!viz::ValidateResult(doc).ok()) return 0;
  auto params = cli::ReadResultParams(doc);
  if (params.ok()) {
    FUZZ_CHECK(params->skew_window >= 0, "negative window");
    FUZZ_CHECK(params->refine_passes >= 0 && params->timeline_passes >= 0,
               "negative passes");
  } else {
    FUZZ_CHECK(params.status().message().starts_with("bad \"params\""),
               params.status().message());
  }
  return 0;
}
