// Faulthandler-style dumps: SigCgt parsing, and real children, one that
// catches SIGUSR1 and writes a stack to its log, one that would die of it.
#include "core/process/signal_dump.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "core/base/file_text.h"
#include "core/base/unique_fd.h"
#include "core/process/spawn_test_helpers.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST(SignalDump, ReadsTheCaughtSignalsFromProcStatus) {
  const std::string status = "Name:\tpython3\nSigIgn:\t0000000001001000\nSigCgt:\t0000000180000200\nCapInh:\t0\n";
  const std::optional<uint64_t> caught = CaughtSignals(status);
  ASSERT_TRUE(caught);
  EXPECT_EQ(*caught, 0x180000200u);
  EXPECT_TRUE(CatchesSignal(*caught, SIGUSR1));  // bit 9: signal 10
  EXPECT_FALSE(CatchesSignal(*caught, SIGUSR2));
  EXPECT_FALSE(CatchesSignal(*caught, 0));
  EXPECT_FALSE(CatchesSignal(*caught, 65));
  EXPECT_FALSE(CaughtSignals("Name:\tx\nSigIgn:\t0\n"));
  EXPECT_FALSE(CaughtSignals("SigCgt:\tzz\n"));
  EXPECT_FALSE(CaughtSignals("SigCgt:\t\n"));
  EXPECT_EQ(CaughtSignals("SigCgt:\t0000000000000000"), 0u);  // the first line, no line end
}

// A child that appends to `log`, catching SIGUSR1 (and writing a stack on
// it, as faulthandler does) when `catches`; it sleeps until killed.
pid_t Child(const std::string& log, bool catches) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  ::dup2(fd, 2);
  if (catches) {
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      const char text[] = "Current thread 0x00007f00 (most recent call first):\n  File \"engine.py\", line 7 in step\n";
      (void)!::write(2, text, sizeof text - 1);
    };
    ::sigaction(SIGUSR1, &sa, nullptr);
  }
  (void)!::write(2, "started\n", 8);
  for (;;) ::pause();
}

struct Children {
  std::vector<pid_t> pids;
  ~Children() {
    for (pid_t p : pids) {
      ::kill(p, SIGKILL);
      test::Reap(p);
    }
  }
};

bool Started(const std::string& path) { return test::Slurp(path).find("started") != std::string::npos; }

TEST(SignalDump, SignalsOnlyTheProcessesThatCatchItAndReadsWhatTheirLogGained) {
  test::TempDir dir("ix-signal-dump");
  const UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Children kids;
  kids.pids = {Child(dir.path() + "/engine.log", true), Child(dir.path() + "/other.log", false)};
  ASSERT_TRUE(test::WaitUntil([&] { return Started(dir.path() + "/engine.log") && Started(dir.path() + "/other.log"); },
                              5s));
  // The handler is installed before "started": SigCgt shows it now.
  std::vector<ProcessInfo> tree;
  for (pid_t p : kids.pids) {
    Result<ProcessInfo> info = ReadProcessInfo(p);
    ASSERT_TRUE(info);
    tree.push_back(info.value());
  }
  const SignalDump dump = SendDumpSignal(tree, SIGUSR1, fd.get(), "engine.log");
  EXPECT_EQ(dump.sent, std::vector<pid_t>{kids.pids[0]});
  EXPECT_EQ(dump.log_offset, static_cast<off_t>(std::strlen("started\n")));
  const auto start = Clock::now();
  AwaitDumps({dump}, fd.get(), Clock::now() + 5s);
  EXPECT_LT(Clock::now() - start, 1500ms);
  const std::string section = DumpSection(dump, fd.get(), 4096);
  EXPECT_NE(section.find("SIGUSR1 (a faulthandler dump) sent to " + std::to_string(kids.pids[0])), std::string::npos)
      << section;
  EXPECT_NE(section.find("Current thread 0x00007f00"), std::string::npos) << section;
  EXPECT_EQ(section.find("started"), std::string::npos) << "only what came after the signal: " << section;
  // The one that does not catch SIGUSR1 was left alone (it would have died).
  EXPECT_EQ(::kill(kids.pids[1], 0), 0);
  Result<ProcessInfo> other = ReadProcessInfo(kids.pids[1]);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other.value().exited());
}

TEST(SignalDump, APidReusedSinceTheTreeWasReadIsNotSignalled) {
  test::TempDir dir("ix-signal-dump");
  const UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Children kids;
  kids.pids = {Child(dir.path() + "/engine.log", true)};
  ASSERT_TRUE(test::WaitUntil([&] { return Started(dir.path() + "/engine.log"); }, 5s));
  Result<ProcessInfo> info = ReadProcessInfo(kids.pids[0]);
  ASSERT_TRUE(info);
  ProcessInfo stale = info.value();
  stale.start_time += 1;  // as if the server died and its pid went to another process
  EXPECT_TRUE(SendDumpSignal({stale}, SIGUSR1, fd.get(), "engine.log").sent.empty());
  EXPECT_EQ(DumpSection(SendDumpSignal({stale}, SIGUSR1, fd.get(), "engine.log"), fd.get(), 4096), "");
}

TEST(SignalDump, ReadsAFileFromAnOffsetButNeverThroughALink) {
  test::TempDir dir("ix-signal-dump");
  const UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::ofstream(dir.path() + "/log") << "0123456789";
  ASSERT_EQ(::symlink((dir.path() + "/log").c_str(), (dir.path() + "/link").c_str()), 0);
  EXPECT_EQ(FileSizeAt(fd.get(), "log"), 10);
  EXPECT_EQ(ReadFileFromAt(fd.get(), "log", 4, 3), "456");
  EXPECT_EQ(ReadFileFromAt(fd.get(), "log", 4, 100), "456789");
  EXPECT_EQ(ReadFileFromAt(fd.get(), "log", 10, 100), "");
  EXPECT_EQ(FileSizeAt(fd.get(), "link"), -1);
  EXPECT_EQ(ReadFileFromAt(fd.get(), "link", 0, 100), "");
  EXPECT_EQ(FileSizeAt(fd.get(), "missing"), -1);
}

}  // namespace
}  // namespace ix
