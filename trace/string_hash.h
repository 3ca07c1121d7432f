// StringHash: a transparent hash for std::unordered_map<std::string, T,
// StringHash, std::equal_to<>>, so that tables of names (nodes, operations)
// are looked up by std::string_view without building a std::string per
// lookup: the readers' and decoders' hot path.
#ifndef BBPROF_TRACE_STRING_HASH_H_
#define BBPROF_TRACE_STRING_HASH_H_

#include <cstddef>
#include <functional>
#include <string_view>

namespace bbprof::trace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>()(s);
  }
};

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_STRING_HASH_H_
