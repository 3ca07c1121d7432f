// libFuzzer target for the offsets file (skewer/clock_model.h) that
// `bbprof merge --offsets` and `bbprof skewer --remove` read. A table the
// parser accepts must survive being written and read again unchanged.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "skewer/clock_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = skewer::ParseOffsetsFile("fuzz.offsets", text);
  if (!table.ok()) {
    FUZZ_CHECK(table.status().message().starts_with("fuzz.offsets"),
               table.status().message());
    return 0;
  }
  const std::string written = skewer::FormatOffsetsFile(*table, "fuzz");
  auto again = skewer::ParseOffsetsFile("written.offsets", written);
  FUZZ_CHECK(again.ok(), again.status().message() + "\n" + written);
  FUZZ_CHECK(skewer::FormatOffsetsFile(*again, "fuzz") == written, written);
  return 0;
}
