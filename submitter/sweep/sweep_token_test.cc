#include "submitter/sweep/sweep_token.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/file_text.h"
#include "tests/support/test.h"

namespace ix {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(SweepToken, Is64HexDigitsAndNewEachTime) {
  const std::string a = NewSweepToken().value();
  const std::string b = NewSweepToken().value();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
}

TEST(SweepToken, IsWrittenPrivateOnceAndReadBack) {
  test::TempDir dir("ix-token");
  const mode_t old = ::umask(0);  // a permissive umask must not widen it
  const std::string token = CreateSweepToken(dir.path()).value();
  ::umask(old);
  const std::string path = SweepTokenPath(dir.path());
  EXPECT_EQ(path, dir.path() + "/collector.token");
  EXPECT_EQ(ModeOf(path), 0600u);
  int err = 0;
  EXPECT_EQ(ReadFileText(path, &err), token + "\n");
  EXPECT_EQ(ReadSweepToken(path).value(), token);
  // Never over an existing file.
  Status again = WriteTokenFile(path, token);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("already there"), std::string::npos) << again.error().message;
}

TEST(SweepToken, ANewSweepReplacesAnEarlierSweepsToken) {
  test::TempDir dir("ix-token");
  const std::string first = CreateSweepToken(dir.path()).value();
  const std::string second = CreateSweepToken(dir.path()).value();
  EXPECT_NE(first, second);
  EXPECT_EQ(ReadSweepToken(SweepTokenPath(dir.path())).value(), second);
}

TEST(SweepToken, NeverWritesThroughALink) {
  test::TempDir dir("ix-token");
  const std::string target = dir.path() + "/target";
  std::filesystem::create_symlink(target, dir.path() + "/link");
  EXPECT_FALSE(WriteTokenFile(dir.path() + "/link", "0123456789abcdef0123"));
  EXPECT_FALSE(std::filesystem::exists(target));
}

TEST(SweepToken, AResumeRefusesALinkAFileOthersMayReadAndNotAFile) {
  test::TempDir dir("ix-token");
  const std::string path = dir.path() + "/collector.token";
  ASSERT_TRUE(WriteTokenFile(path, NewSweepToken().value()));
  std::filesystem::create_symlink(path, dir.path() + "/link");
  Result<std::string> link = ReadSweepToken(dir.path() + "/link");
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().message.find("symbolic link"), std::string::npos) << link.error().message;

  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  Result<std::string> shared = ReadSweepToken(path);
  ASSERT_FALSE(shared);
  EXPECT_NE(shared.error().message.find("readable or writable by group or others"), std::string::npos)
      << shared.error().message;
  EXPECT_NE(shared.error().message.find(path), std::string::npos) << shared.error().message;

  std::filesystem::create_directory(dir.path() + "/dir");
  ASSERT_EQ(::chmod((dir.path() + "/dir").c_str(), 0700), 0);
  Result<std::string> not_file = ReadSweepToken(dir.path() + "/dir");
  ASSERT_FALSE(not_file);
  EXPECT_NE(not_file.error().message.find("not a regular file"), std::string::npos) << not_file.error().message;

  Result<std::string> missing = ReadSweepToken(dir.path() + "/none");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("none"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace ix
