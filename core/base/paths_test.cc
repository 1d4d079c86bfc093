#include "core/base/paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/test.h"

namespace ix {
namespace {

using S = std::vector<std::string>;

TEST(ExecCandidates, FollowsExecvpsOrder) {
  EXPECT_EQ(ExecCandidates("vllm", "/a:/b/:"), (S{"/a/vllm", "/b/vllm", "./vllm"}));
  EXPECT_EQ(ExecCandidates("./x", "/a"), (S{"./x"}));
  EXPECT_TRUE(ExecCandidates("x", "").empty());
}

TEST(MakeDirs, CreatesTheMissingOnesWithTheirModes) {
  test::TempDir tmp("ix-paths");
  const std::string leaf = tmp.path() + "/a/b/c";
  ASSERT_TRUE(MakeDirs(leaf, 0700, 0755, "run_dir"));
  struct stat st{};
  ASSERT_EQ(::stat(leaf.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((tmp.path() + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u & ~::umask(022));
  EXPECT_TRUE(MakeDirs(leaf, 0700, 0755, "run_dir"));  // existing: fine
}

TEST(MakeDirs, AnErrorNamesWhatAndThePart) {
  Status s = MakeDirs("/proc/self/nope/x", 0700, 0755, "lease dir");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("lease dir /proc/self/nope/x: cannot create /proc/self/nope: "), std::string::npos)
      << s.error().message;
}

TEST(MakeParentDirs, LeavesTheLeafAlone) {
  test::TempDir tmp("ix-paths");
  ASSERT_TRUE(MakeParentDirs(tmp.path() + "/p/q/state.db", 0700));
  struct stat st{};
  EXPECT_EQ(::stat((tmp.path() + "/p/q").c_str(), &st), 0);
  EXPECT_NE(::stat((tmp.path() + "/p/q/state.db").c_str(), &st), 0);
}

}  // namespace
}  // namespace ix
