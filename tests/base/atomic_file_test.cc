// AtomicFile's one rule for outputs: regular files (and new paths) are
// replaced atomically keeping their mode, symbolic links are written through,
// character devices and FIFOs are written straight into and stay what they
// are.
#include "base/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include "tests/util/temp_dir.h"

namespace bbprof {
namespace {

using testing::ListDir;
using testing::ReadFile;
using testing::TempDir;

TEST(AtomicFileTest, NewFileAppearsOnlyOnCommit) {
  TempDir dir;
  const std::string path = dir.File("out.txt");
  auto f = AtomicFile::Create(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->atomic());
  ASSERT_TRUE(f->Write("hello\n").ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE(f->Commit().ok());
  EXPECT_EQ(ReadFile(path), "hello\n");
  EXPECT_EQ(ListDir(dir.path()), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFileTest, AbandonLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.Write("out.txt", "old\n");
  {
    auto f = AtomicFile::Create(path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->Write("new\n").ok());
  }
  EXPECT_EQ(ReadFile(path), "old\n");
  EXPECT_EQ(ListDir(dir.path()), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFileTest, KeepsTheModeOfAnExistingFile) {
  TempDir dir;
  const std::string path = dir.Write("out.txt", "old\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_TRUE(WriteFileAtomically(path, "new\n").ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(ReadFile(path), "new\n");
}

TEST(AtomicFileTest, WritesThroughASymbolicLinkToItsTarget) {
  TempDir dir;
  std::filesystem::create_directory(dir.File("real"));
  const std::string target = dir.Write("real/target.txt", "old\n");
  ASSERT_EQ(::chmod(target.c_str(), 0604), 0);
  const std::string link = dir.File("link.txt");
  // A relative link, resolved against the link's own folder.
  ASSERT_EQ(::symlink("real/target.txt", link.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(link, "new\n").ok());
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(ReadFile(target), "new\n");
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0604u);
  // The temporary went beside the target and is gone.
  EXPECT_EQ(ListDir(dir.File("real")), std::vector<std::string>{"target.txt"});
}

TEST(AtomicFileTest, ADanglingLinkGetsItsTargetCreated) {
  TempDir dir;
  const std::string link = dir.File("link.txt");
  ASSERT_EQ(::symlink(dir.File("new.txt").c_str(), link.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(link, "x\n").ok());
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(ReadFile(dir.File("new.txt")), "x\n");
}

TEST(AtomicFileTest, ALinkLoopIsAnError) {
  TempDir dir;
  const std::string a = dir.File("a"), b = dir.File("b");
  ASSERT_EQ(::symlink(b.c_str(), a.c_str()), 0);
  ASSERT_EQ(::symlink(a.c_str(), b.c_str()), 0);
  Status s = WriteFileAtomically(a, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("symbolic links"), std::string::npos)
      << s.message();
}

TEST(AtomicFileTest, AFifoIsWrittenIntoAndStaysAFifo) {
  TempDir dir;
  const std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = ReadFile(fifo); });
  Status s = WriteFileAtomically(fifo, "through the pipe\n");
  reader.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(received, "through the pipe\n");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(ListDir(dir.path()), std::vector<std::string>{"pipe"});
}

TEST(AtomicFileTest, DevNullStaysACharacterDevice) {
  const testing::DevNullId before = testing::CurrentDevNull();
  ASSERT_TRUE(before.is_char);
  auto f = AtomicFile::Create("/dev/null");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_FALSE(f->atomic());
  ASSERT_TRUE(f->Write(std::string(3 << 20, 'x')).ok());
  ASSERT_TRUE(f->Commit().ok());
  EXPECT_TRUE(testing::CurrentDevNull() == before);
}

TEST(AtomicFileTest, AFolderIsRefused) {
  TempDir dir;
  Status s = WriteFileAtomically(dir.path(), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is a folder"), std::string::npos) << s.message();
}

TEST(AtomicFileTest, ResolveOutputClassifies) {
  TempDir dir;
  auto out = ResolveOutput("-");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, OutputTarget::Kind::kStdout);
  out = ResolveOutput("/dev/null");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, OutputTarget::Kind::kStream);
  out = ResolveOutput(dir.File("new"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, OutputTarget::Kind::kFile);
  EXPECT_FALSE(out->exists);
  const std::string file = dir.Write("old", "x");
  ASSERT_EQ(::symlink(file.c_str(), dir.File("ln").c_str()), 0);
  out = ResolveOutput(dir.File("ln"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, OutputTarget::Kind::kFile);
  EXPECT_TRUE(out->exists);
  EXPECT_EQ(out->path, file);
}

}  // namespace
}  // namespace bbprof
