// The output rule of base/atomic_file.h seen through the binary: an output
// named by the user is a file replaced atomically, or a device, FIFO or
// standard output written straight into, never replaced.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace bbprof {
namespace {

using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;

const std::string kSample =
    std::string(BBPROF_SOURCE_DIR) + "/samples/paper_example.trace";

TEST(OutputCliTest, ConvertToDevNullLeavesItACharacterDevice) {
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  std::string out;
  EXPECT_EQ(RunCli("convert " + kSample + " /dev/null", &out), 0) << out;
  EXPECT_EQ(RunCli("convert " + kSample + " /dev/null --format binary", &out),
            0)
      << out;
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  EXPECT_EQ(after.st_ino, before.st_ino);
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

}  // namespace
}  // namespace bbprof
