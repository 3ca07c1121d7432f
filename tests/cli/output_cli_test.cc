// The output rule of base/atomic_file.h seen through the binary: an output
// named by the user is a file replaced atomically, or a device, FIFO or
// standard output written straight into, never replaced.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/util/run_cli.h"
#include "tests/util/spawn.h"
#include "tests/util/temp_dir.h"

namespace bbprof {
namespace {

using testing::Child;
using testing::ListDir;
using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;
using testing::WaitFor;
using namespace std::chrono_literals;

// Whether `dir` holds a temporary of NAME with bytes in it.
bool WritingStarted(const std::string& dir, const std::string& name) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::error_code ec;
    if (e.path().filename().string().rfind(name + ".tmp.", 0) == 0 &&
        std::filesystem::file_size(e.path(), ec) > 0) {
      return true;
    }
  }
  return false;
}

const std::string kSample =
    std::string(BBPROF_SOURCE_DIR) + "/samples/paper_example.trace";

TEST(OutputCliTest, ConvertToDevNullLeavesItACharacterDevice) {
  const testing::DevNullId before = testing::CurrentDevNull();
  // Another program run as root may already have replaced it.
  ASSERT_TRUE(before.is_char)
      << "/dev/null is not a character device before the test";
  std::string out;
  EXPECT_EQ(RunCli("convert " + kSample + " /dev/null", &out), 0) << out;
  EXPECT_EQ(RunCli("convert " + kSample + " /dev/null --format binary", &out),
            0)
      << out;
  EXPECT_TRUE(testing::CurrentDevNull() == before);
}

TEST(OutputCliTest, ConvertWritesThroughALinkAndKeepsTheMode) {
  TempDir dir;
  const std::string target = dir.Write("target.trace", "old\n");
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  const std::string link = dir.File("link.trace");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  std::string out;
  ASSERT_EQ(RunCli("convert " + kSample + " " + link, &out), 0) << out;
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(ReadFile(target), ReadFile(kSample));
}

TEST(OutputCliTest, DashIsStandardOutputForJsonResults) {
  std::string out;
  ASSERT_EQ(RunCli("stats " + kSample + " --json - -q", &out), 0) << out;
  EXPECT_EQ(out.rfind("{", 0), 0u) << out;
  EXPECT_FALSE(std::filesystem::exists("-"));
}

// A long streaming writer interrupted after it started writing: exit 130, no
// temporary left, the previous output untouched.
void InterruptMaketrace(int sig, const std::string& name) {
  TempDir dir;
  const std::string out = dir.Write(name, "previous\n");
  Child child({"maketrace",
               std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-long.conf",
               "-o", out, "-n", "100000000", "-q"},
              -1, dir.File("log"));
  ASSERT_TRUE(child.started());
  ASSERT_TRUE(WaitFor([&] { return WritingStarted(dir.path(), name); }, 60s))
      << ReadFile(dir.File("log"));
  child.Signal(sig);
  EXPECT_EQ(child.Wait(10s), 130) << ReadFile(dir.File("log"));
  EXPECT_EQ(ListDir(dir.path()), (std::vector<std::string>{"log", name}));
  EXPECT_EQ(ReadFile(out), "previous\n");
  EXPECT_NE(ReadFile(dir.File("log")).find("bbprof maketrace: interrupted"),
            std::string::npos)
      << ReadFile(dir.File("log"));
}

TEST(OutputCliTest, InterruptedMaketraceLeavesNoTemporaryOnSigint) {
  InterruptMaketrace(SIGINT, "out.trace");
}

TEST(OutputCliTest, InterruptedMaketraceLeavesNoTemporaryOnSigterm) {
  InterruptMaketrace(SIGTERM, "out.bbt.gz");
}

// convert and merge --sort stream the same way: interrupted mid-write.
TEST(OutputCliTest, InterruptedConvertAndMergeLeaveNoTemporary) {
  TempDir dir;
  std::string log;
  ASSERT_EQ(RunCli("maketrace " + std::string(BBPROF_SOURCE_DIR) +
                       "/samples/multitier-long.conf -n 2000000 -q -o " +
                       dir.File("big.bbt"),
                   &log),
            0)
      << log;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"convert", dir.File("big.bbt"),
                                 dir.File("out.trace.gz")},
        std::vector<std::string>{"merge", "--sort", dir.File("big.bbt"), "-o",
                                 dir.File("out.trace.gz")}}) {
    Child child(args, -1, dir.File("log"));
    ASSERT_TRUE(child.started());
    ASSERT_TRUE(WaitFor(
        [&] { return WritingStarted(dir.path(), "out.trace.gz"); }, 60s))
        << args[0] << ": " << ReadFile(dir.File("log"));
    child.Signal(SIGINT);
    EXPECT_EQ(child.Wait(10s), 130)
        << args[0] << ": " << ReadFile(dir.File("log"));
    EXPECT_EQ(ListDir(dir.path()), (std::vector<std::string>{"big.bbt", "log"}))
        << args[0];
  }
}

}  // namespace
}  // namespace bbprof
