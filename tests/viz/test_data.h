// The result documents under tests/viz/data/, shared by the viz tests.
#ifndef BBPROF_TESTS_VIZ_TEST_DATA_H_
#define BBPROF_TESTS_VIZ_TEST_DATA_H_

#include <nlohmann/json.hpp>
#include <string>

#include "tests/util/temp_dir.h"

namespace bbprof::viz {

inline const std::string kData =
    std::string(BBPROF_SOURCE_DIR) + "/tests/viz/data/";

inline nlohmann::json Load(const std::string& name) {
  return nlohmann::json::parse(bbprof::testing::ReadFile(kData + name));
}

}  // namespace bbprof::viz

#endif  // BBPROF_TESTS_VIZ_TEST_DATA_H_
