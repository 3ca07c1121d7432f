// libFuzzer target for `bbprof render` (viz/render.h): a result document
// validated and drawn into memory (dot; Graphviz lays it out in-process).
// Whatever passes validation must render without throwing or crashing.
// Documents with many patterns or vertices are cut to a few by the size
// limit of the run (-max_len), which keeps layouts quick.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "results/validate.h"
#include "viz/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return -1;
  if (!viz::ValidateResult(doc).ok()) return 0;
  viz::RenderOptions options;
  options.format = viz::Format::kDot;
  options.top = 4;
  auto files = viz::RenderResult(doc, options);
  if (files.ok()) FUZZ_CHECK(!files->empty(), "no files");
  return 0;
}
