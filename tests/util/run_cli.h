// RunCli: runs the bbprof binary under test with arguments (a shell command
// line), collects standard output and error together, returns the exit code.
#ifndef BBPROF_TESTS_UTIL_RUN_CLI_H_
#define BBPROF_TESTS_UTIL_RUN_CLI_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace bbprof::testing {

inline int RunCli(const std::string& args, std::string* out) {
  std::string cmd = std::string(BBPROF_BINARY) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace bbprof::testing

#endif  // BBPROF_TESTS_UTIL_RUN_CLI_H_
