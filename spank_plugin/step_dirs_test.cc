#include "spank_plugin/step_dirs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/support/test.h"

namespace ix {
namespace {

// Alive: the owners whose pid is listed.
class ListedLiveness : public OwnerLiveness {
 public:
  explicit ListedLiveness(std::set<pid_t> alive) : alive_(std::move(alive)) {}
  bool IsAlive(const LeaseOwner& owner) override { return alive_.count(owner.pid) > 0; }

 private:
  std::set<pid_t> alive_;
};

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(StepDirs, TheRecordRoundTrips) {
  LeaseOwner o;
  o.pid = 4242;
  o.start_time = 777;
  o.boot_id = "b-1";
  EXPECT_EQ(FormatStepOwner(o), "4242 777 b-1\n");
  const std::optional<LeaseOwner> back = ParseStepOwner("7.0", FormatStepOwner(o));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, "7.0");
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->start_time, 777u);
  EXPECT_EQ(back->boot_id, "b-1");
  EXPECT_FALSE(ParseStepOwner("7.0", ""));
  EXPECT_FALSE(ParseStepOwner("7.0", "1 2 b\n"));  // pid 1 is never a slurmstepd
  EXPECT_FALSE(ParseStepOwner("7.0", "x 2 b\n"));
  EXPECT_EQ(StepOwnerFile("7.0"), ".7.0.owner");
}

TEST(StepDirs, OnlyDirectoriesOfDeadSlurmstepdsAreRemoved) {
  test::TempDir d("ix-step-dirs");
  const std::string& run = d.path();
  for (const char* step : {"1.0", "2.0", "3.0", "4.0"}) {
    std::filesystem::create_directories(run + "/" + step + "/sub");
    Write(run + "/" + step + "/sub/server.log", "x");
  }
  Write(run + "/.1.0.owner", "100 5 boot\n");  // alive
  Write(run + "/.2.0.owner", "200 5 boot\n");  // dead
  Write(run + "/.3.0.owner", "garbage\n");     // unreadable record: dead
  // 4.0 has no record (a directory the backstop kept): never touched.
  Write(run + "/.9.0.owner", "300 5 boot\n");  // dead, its directory already gone
  const int fd = ::open(run.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ListedLiveness live({100});
  std::vector<std::string> problems;
  Result<std::vector<std::string>> removed = RemoveStaleStepDirs(fd, run, live, &problems);
  ::close(fd);
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(std::set<std::string>(removed.value().begin(), removed.value().end()),
            (std::set<std::string>{"2.0", "3.0", "9.0"}));
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(std::filesystem::exists(run + "/1.0/sub/server.log"));
  EXPECT_TRUE(std::filesystem::exists(run + "/.1.0.owner"));
  EXPECT_FALSE(std::filesystem::exists(run + "/2.0"));
  EXPECT_FALSE(std::filesystem::exists(run + "/.2.0.owner"));
  EXPECT_FALSE(std::filesystem::exists(run + "/3.0"));
  EXPECT_TRUE(std::filesystem::exists(run + "/4.0/sub/server.log"));
  EXPECT_FALSE(std::filesystem::exists(run + "/.9.0.owner"));
}

TEST(StepDirs, ALinkNamedLikeAStepIsRemovedNotFollowed) {
  test::TempDir d("ix-step-dirs");
  test::TempDir outside("ix-step-dirs-outside");
  Write(outside.path() + "/keep", "x");
  std::filesystem::create_directory_symlink(outside.path(), d.path() + "/5.0");
  Write(d.path() + "/.5.0.owner", "200 5 boot\n");
  const int fd = ::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ListedLiveness live({});
  Result<std::vector<std::string>> removed = RemoveStaleStepDirs(fd, d.path(), live, nullptr);
  ::close(fd);
  ASSERT_TRUE(removed.ok());
  EXPECT_FALSE(std::filesystem::exists(d.path() + "/5.0"));
  EXPECT_TRUE(std::filesystem::exists(outside.path() + "/keep"));
}

}  // namespace
}  // namespace ix
