// The cores this process may run on: what a command that splits its work
// over threads uses when the user does not say how many (`nest --threads
// auto`, the default).
#ifndef BBPROF_BASE_CORES_H_
#define BBPROF_BASE_CORES_H_

namespace bbprof {

// The CPUs in this process's affinity mask (taskset, cpusets, a container's
// cpuset), which std::thread::hardware_concurrency() does not see; that
// count when the mask cannot be read; at least 1.
int UsableCores();

}  // namespace bbprof

#endif  // BBPROF_BASE_CORES_H_
