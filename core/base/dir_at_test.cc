#include "core/base/dir_at.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test.h"

namespace ix {
namespace {

namespace fs = std::filesystem;

TEST(OpenOwnedDir, CreatesAndChecksLikeTheLeaseDirectory) {
  test::TempDir d("ix-dir-at-test");
  Result<int> fd = OpenOwnedDir(d.path() + "/run/steps", 0755, "run_dir");
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  ::close(fd.value());
  ::chmod((d.path() + "/run/steps").c_str(), 0777);
  Result<int> open = OpenOwnedDir(d.path() + "/run/steps", 0755, "run_dir");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("with mode 0777; it must be owned by uid"), std::string::npos)
      << open.error().message;
  fs::create_directory_symlink(d.path() + "/run/steps", d.path() + "/link");
  EXPECT_FALSE(OpenOwnedDir(d.path() + "/link", 0755, "run_dir").ok());
  EXPECT_FALSE(OpenOwnedDir("relative/dir", 0755, "run_dir").ok());
}

TEST(RemoveTreeAt, RemovesATreeWithoutFollowingLinks) {
  test::TempDir d("ix-dir-at-test");
  test::TempDir outside("ix-dir-at-outside");
  std::ofstream(outside.path() + "/keep") << "keep";
  const std::string step = d.path() + "/7.0";
  fs::create_directories(step + "/results/deep/deeper");
  std::ofstream(step + "/results/deep/deeper/server.log") << "log";
  fs::create_directory_symlink(outside.path(), step + "/results/link-to-dir");
  fs::create_symlink(outside.path() + "/keep", step + "/state");
  ASSERT_EQ(::mkfifo((step + "/stepd.pid").c_str(), 0600), 0);
  const int parent = ::open(d.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(RemoveTreeAt(parent, d.path(), "7.0").ok());
  EXPECT_FALSE(fs::exists(step));
  EXPECT_TRUE(fs::exists(outside.path() + "/keep"));  // a link's target is never touched
  EXPECT_TRUE(RemoveTreeAt(parent, d.path(), "7.0").ok());  // already gone
  // A tree larger than allowed is an error, not a long wait.
  fs::create_directories(step);
  for (int i = 0; i < 20; ++i) std::ofstream(step + "/f" + std::to_string(i));
  Status s = RemoveTreeAt(parent, d.path(), "7.0", 5);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("more entries than allowed"), std::string::npos) << s.error().message;
  ::close(parent);
}

}  // namespace
}  // namespace ix
