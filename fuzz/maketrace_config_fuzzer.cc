// libFuzzer target for the maketrace configuration parser
// (maketrace/config.h), with and without a required length. A refusal must
// name the file and line ("FILE:LINE: ...").
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "maketrace/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool require_length : {true, false}) {
    auto config = maketrace::ParseConfig(text, "fuzz.conf", require_length);
    if (!config.ok()) {
      FUZZ_CHECK(config.status().message().starts_with("fuzz.conf"),
                 config.status().message());
    }
  }
  double ns = 0;
  std::string why = maketrace::ParseDuration(text.substr(0, 64), &ns);
  if (why.empty()) FUZZ_CHECK(ns >= 0, std::to_string(ns));
  return 0;
}
