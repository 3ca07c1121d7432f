// The version every result, export and diff document records ("version").
#ifndef BBPROF_BASE_VERSION_H_
#define BBPROF_BASE_VERSION_H_

namespace bbprof {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace bbprof

#endif  // BBPROF_BASE_VERSION_H_
