// TempDir: a fresh directory for one test, removed with everything in it.
#ifndef BBPROF_TESTS_UTIL_TEMP_DIR_H_
#define BBPROF_TESTS_UTIL_TEMP_DIR_H_

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace bbprof::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "bbprof-test-XXXXXX")
            .string();
    char* p = mkdtemp(tmpl.data());
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Writes `contents` to NAME in the directory and returns its path.
  std::string Write(const std::string& name,
                    const std::string& contents) const {
    std::string p = File(name);
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The lines of a text trace that are records (not the header, not #meta).
inline std::vector<std::string> RecordLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

// Names of the entries in `dir`, sorted (to see that no temporary is left).
inline std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What /dev/null is: a test that writes to it checks it is the same
// character device afterwards (never replaced by a regular file).
struct DevNullId {
  bool is_char = false;
  dev_t rdev = 0;
  ino_t ino = 0;
  bool operator==(const DevNullId&) const = default;
};
inline DevNullId CurrentDevNull() {
  struct stat st {};
  if (::stat("/dev/null", &st) != 0) return {};
  return {S_ISCHR(st.st_mode), st.st_rdev, st.st_ino};
}

}  // namespace bbprof::testing

#endif  // BBPROF_TESTS_UTIL_TEMP_DIR_H_
