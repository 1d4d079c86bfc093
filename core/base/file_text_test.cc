// ReadFileTextAt and WriteFileAtomicAt: what root relies on when it reads
// and writes in a directory the job user owns.
#include "core/base/file_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test.h"

namespace ix {
namespace {

// A temporary directory and a descriptor on it.
class Dir {
 public:
  Dir() : fd_(::open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  ~Dir() { ::close(fd_); }
  const std::string& path() const { return dir_.path(); }
  int fd() const { return fd_; }

 private:
  test::TempDir dir_{"ix-file-text-test"};
  int fd_;
};

TEST(ReadFileTextAt, ReadsARegularFile) {
  Dir d;
  std::ofstream(d.path() + "/pid") << "123\n";
  int err = -1;
  EXPECT_EQ(ReadFileTextAt(d.fd(), "pid", &err), "123\n");
  EXPECT_EQ(err, 0);
}

TEST(ReadFileTextAt, RefusesLinksFifosAndLargeFiles) {
  Dir d;
  int err = 0;
  ASSERT_EQ(::symlink("/dev/zero", (d.path() + "/link").c_str()), 0);
  EXPECT_EQ(ReadFileTextAt(d.fd(), "link", &err), "");
  EXPECT_EQ(err, ELOOP);
  // A FIFO with no writer would block a plain open for ever.
  ASSERT_EQ(::mkfifo((d.path() + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(ReadFileTextAt(d.fd(), "fifo", &err), "");
  EXPECT_EQ(err, EINVAL);
  std::ofstream(d.path() + "/big") << std::string(100, 'x');
  EXPECT_EQ(ReadFileTextAt(d.fd(), "big", &err, 64), "");
  EXPECT_EQ(err, EFBIG);
  EXPECT_EQ(ReadFileTextAt(d.fd(), "missing", &err), "");
  EXPECT_EQ(err, ENOENT);
}

TEST(WriteFileAtomicAt, ReplacesAPlantedLinkInsteadOfFollowingIt) {
  Dir d, victim;
  std::ofstream(victim.path() + "/target") << "keep";
  ASSERT_EQ(::symlink((victim.path() + "/target").c_str(), (d.path() + "/state.tmp").c_str()), 0);
  ASSERT_EQ(::symlink((victim.path() + "/target").c_str(), (d.path() + "/state").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomicAt(d.fd(), d.path(), "state", "ready\n").ok());
  int err = 0;
  EXPECT_EQ(ReadFileText(victim.path() + "/target", &err), "keep");
  EXPECT_EQ(ReadFileTextAt(d.fd(), "state", &err), "ready\n");
  struct stat st{};
  ASSERT_EQ(::lstat((d.path() + "/state").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_FALSE(std::filesystem::exists(d.path() + "/state.tmp"));
}

TEST(WriteFileAtomicAt, WorksWhenTheDirectoryHasNoPathAnyMore) {
  Dir d;
  const std::string moved = d.path() + ".moved";
  std::filesystem::rename(d.path(), moved);
  EXPECT_TRUE(WriteFileAtomicAt(d.fd(), "run dir", "failure.json", "{}\n").ok());
  int err = 0;
  EXPECT_EQ(ReadFileText(moved + "/failure.json", &err), "{}\n");
  std::filesystem::rename(moved, d.path());
  Status bad = WriteFileAtomicAt(-1, "run dir", "x", "y");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("cannot write run dir/x.tmp: Bad file descriptor"), std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace ix
