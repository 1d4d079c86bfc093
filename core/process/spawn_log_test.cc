// Spawn's log in a directory a job user may write (a step's result
// directory): what is planted at the log's name is refused at once, never
// blocked on, followed or written through.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/process/spawn.h"
#include "core/process/spawn_test_helpers.h"
#include "tests/support/test.h"

namespace ix {
namespace {

namespace fs = std::filesystem;

// A spec that writes one line to its log in `dir`.
SpawnSpec Echo(int dir_fd, const std::string& log) {
  SpawnSpec s = test::TestSpec("engine", {"/bin/sh", "-c", "echo logged"}, log);
  s.log_dir_fd = dir_fd;
  return s;
}

// Spawn's answer for a log that already exists as something else, timed.
Result<SpawnedProcess> SpawnTimed(const SpawnSpec& spec, std::chrono::milliseconds& took) {
  const auto start = std::chrono::steady_clock::now();
  Result<SpawnedProcess> r = Spawn(spec);
  took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  if (r) test::Reap(r.value().id.pid);
  return r;
}

TEST(SpawnLog, AFifoIsRefusedWithoutBlocking) {
  test::TempDir d("ix-spawn-log-test");
  ASSERT_EQ(::mkfifo((d.path() + "/server.log").c_str(), 0644), 0);
  const int dir = ::open(d.path().c_str(), O_RDONLY | O_DIRECTORY);
  std::chrono::milliseconds took{};
  Result<SpawnedProcess> r = SpawnTimed(Echo(dir, "server.log"), took);
  ASSERT_FALSE(r.ok()) << "spawned with a FIFO as its log";
  EXPECT_NE(r.error().message.find("cannot open log 'server.log'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("not a regular file"), std::string::npos) << r.error().message;
  EXPECT_LT(took.count(), 1000);
  // A FIFO with a reader opens, and is refused all the same.
  const int reader = ::open((d.path() + "/server.log").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  r = SpawnTimed(Echo(dir, "server.log"), took);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a regular file"), std::string::npos) << r.error().message;
  ::close(reader);
  ::close(dir);
}

TEST(SpawnLog, ASymlinkIsNotFollowed) {
  test::TempDir d("ix-spawn-log-test");
  test::TempDir outside("ix-spawn-log-outside");
  const std::string target = outside.path() + "/target";
  std::ofstream(target) << "before\n";
  fs::create_symlink(target, d.path() + "/server.log");
  fs::create_symlink("/dev/zero", d.path() + "/router.log");
  const int dir = ::open(d.path().c_str(), O_RDONLY | O_DIRECTORY);
  std::chrono::milliseconds took{};
  for (const char* log : {"server.log", "router.log"}) {
    Result<SpawnedProcess> r = SpawnTimed(Echo(dir, log), took);
    ASSERT_FALSE(r.ok()) << log << ": spawned through a symlink";
    EXPECT_NE(r.error().message.find("symbolic link"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(test::Slurp(target), "before\n");  // never written through the link
  ::close(dir);
}

TEST(SpawnLog, ARegularFileIsAppendedTo) {
  test::TempDir d("ix-spawn-log-test");
  std::ofstream(d.path() + "/server.log") << "earlier\n";
  const int dir = ::open(d.path().c_str(), O_RDONLY | O_DIRECTORY);
  std::chrono::milliseconds took{};
  Result<SpawnedProcess> r = SpawnTimed(Echo(dir, "server.log"), took);
  ASSERT_TRUE(r.ok()) << r.error().message;
  r = SpawnTimed(Echo(dir, "new.log"), took);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(test::Slurp(d.path() + "/server.log"), "earlier\nlogged\n");
  EXPECT_EQ(test::Slurp(d.path() + "/new.log"), "logged\n");
  ::close(dir);
}

}  // namespace
}  // namespace ix
