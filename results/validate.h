// Reading result documents (shared/spec/results-json.md): typed accessors
// that name the JSON path of a bad value, and ValidateResult, the one check
// of a whole `bbprof nest` or `bbprof convolve` document that every reader
// of results runs first (render, eval), so a malformed or forged result is
// refused with `patterns[3].root.latency_s.mean: negative (...)` instead of
// being drawn or scored.
#ifndef BBPROF_RESULTS_VALIDATE_H_
#define BBPROF_RESULTS_VALIDATE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace bbprof::viz {

// Checks `doc` against the spec: a "tool" the project knows, and every field
// a reader relies on present, of its type, finite, and in range (counts and
// ranks non-negative integers, latencies and delays non-negative, optional
// summary fields numbers when present, vertex ids that edges refer to,
// paths with one delay per hop after the first). Unknown fields are allowed
// (the spec lets fields be added). Errors start with the JSON path ("$" for
// the document), without the file name.
Status ValidateResult(const nlohmann::json& doc);

// Reads and parses a result file ('-': standard input). Errors name the
// file, and the line and column of a JSON syntax error; the document is not
// validated yet (ValidateResult).
Result<nlohmann::json> LoadResultJson(const std::string& path);

// The accessors behind it. `path` is the JSON path of `obj` ("" for the
// document); errors name path.key and what was expected.
Status FieldError(const std::string& path, const char* expected,
                  const char* what);
std::string JoinPath(const std::string& path, const std::string& key);
Result<const nlohmann::json*> Member(const nlohmann::json& obj,
                                     const std::string& path,
                                     const std::string& key,
                                     const char* expected);
Result<std::string> GetString(const nlohmann::json& obj,
                              const std::string& path, const std::string& key);
// A finite number.
Result<double> GetNumber(const nlohmann::json& obj, const std::string& path,
                         const std::string& key);
// An integer below 2^63.
Result<int64_t> GetInteger(const nlohmann::json& obj, const std::string& path,
                           const std::string& key);
Result<const nlohmann::json*> GetArray(const nlohmann::json& obj,
                                       const std::string& path,
                                       const std::string& key);

}  // namespace bbprof::viz

#endif  // BBPROF_RESULTS_VALIDATE_H_
