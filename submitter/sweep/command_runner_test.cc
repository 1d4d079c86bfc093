#include "submitter/sweep/command_runner.h"

#include <gtest/gtest.h>

#include <chrono>

namespace ix {
namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const std::vector<std::string> kEnv{"PATH=/usr/bin:/bin", "LC_ALL=C"};

TEST(RunCommand, RunsAProgramWithExactlyTheGivenEnvironment) {
  Result<CommandOutput> r = RunCommand({"echo", "hello", "two words"}, kEnv);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().ok());
  EXPECT_EQ(r.value().out, "hello two words\n");
  EXPECT_EQ(r.value().err, "");
  Result<CommandOutput> env = RunCommand({"/usr/bin/env"}, {"A=1", "B=x y"});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env.value().out, "A=1\nB=x y\n");
  // stdin is /dev/null: cat ends at once.
  Result<CommandOutput> cat = RunCommand({"cat"}, kEnv, std::chrono::seconds(5));
  ASSERT_TRUE(cat.ok()) << cat.error().message;
  EXPECT_EQ(cat.value().out, "");
}

TEST(RunCommand, ReadsMegabytesOnBothPipesWithoutDeadlock) {
  // stderr first: a reader that waited for stdout's end would hang here.
  Result<CommandOutput> r = RunCommand(
      {"/bin/sh", "-c", "yes e | head -c 3000000 >&2; yes o | head -c 3000000; yes e | head -c 1000 >&2"}, kEnv,
      std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().ok()) << r.value().Describe();
  EXPECT_EQ(r.value().out.size(), 3000000u);
  EXPECT_EQ(r.value().err.size(), 3001000u);
  EXPECT_EQ(r.value().out.substr(0, 4), "o\no\n");
  EXPECT_EQ(r.value().err.substr(0, 4), "e\ne\n");
}

TEST(RunCommand, ExitStatusSignalMissingProgramAndTimeout) {
  Result<CommandOutput> fail = RunCommand({"/bin/sh", "-c", "echo oops >&2; exit 3"}, kEnv);
  ASSERT_TRUE(fail.ok());
  EXPECT_FALSE(fail.value().ok());
  EXPECT_EQ(fail.value().exit_code, 3);
  EXPECT_EQ(fail.value().err, "oops\n");
  EXPECT_EQ(fail.value().Describe(), "exit status 3");

  Result<CommandOutput> sig = RunCommand({"/bin/sh", "-c", "kill -TERM $$"}, kEnv);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig.value().signal, 15);
  EXPECT_EQ(sig.value().Describe(), "killed by signal 15 (Terminated)");

  Result<CommandOutput> missing = RunCommand({"ix-no-such-program"}, kEnv);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "cannot execute 'ix-no-such-program': No such file or directory (PATH=/usr/bin:/bin)");
  Result<CommandOutput> abs = RunCommand({"/nonexistent/sbatch"}, kEnv);
  ASSERT_FALSE(abs.ok());
  EXPECT_EQ(abs.error().message, "cannot execute '/nonexistent/sbatch': No such file or directory");
  EXPECT_FALSE(RunCommand({}, kEnv).ok());
  EXPECT_TRUE(Contains(RunCommand({"echo"}, {"HOME=/"}).error().message, "PATH is not set"));

  const auto start = std::chrono::steady_clock::now();
  Result<CommandOutput> slow =
      RunCommand({"/bin/sh", "-c", "echo still thinking >&2; sleep 30"}, kEnv, std::chrono::milliseconds(300));
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error().message,
            "'/bin/sh' did not finish within 300 ms and was killed; its stderr ended with: still thinking");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace ix
