#include "core/base/proc_fs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace ix {
namespace {

TEST(ProcStat, ParsesACommWithSpacesAndParentheses) {
  const std::string text =
      "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
  Result<ProcessInfo> p = ParseProcStat(text, "/proc/4242/stat");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p.value().pid, 4242);
  EXPECT_EQ(p.value().comm, "a) b (c)");
  EXPECT_EQ(p.value().state, 'S');
  EXPECT_EQ(p.value().ppid, 17);
  EXPECT_EQ(p.value().pgid, 4242);
  EXPECT_EQ(p.value().sid, 4242);
  EXPECT_EQ(p.value().start_time, 987654u);
  EXPECT_EQ(p.value().utime_ticks, 1u);
  EXPECT_EQ(p.value().stime_ticks, 2u);
  EXPECT_EQ(p.value().rss_pages, 200u);
  EXPECT_FALSE(p.value().exited());

  Result<ProcessInfo> bad = ParseProcStat("12 (x) Z 1 2", "/proc/12/stat");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/proc/12/stat: too few fields"), std::string::npos) << bad.error().message;
}

TEST(ProcFs, ReadsThisProcess) {
  Result<ProcessInfo> me = ReadProcessInfo(::getpid());
  ASSERT_TRUE(me) << me.error().message;
  EXPECT_EQ(me.value().pid, ::getpid());
  EXPECT_EQ(me.value().ppid, ::getppid());
  EXPECT_GT(me.value().start_time, 0u);
  EXPECT_EQ(LiveStartTime(::getpid()), me.value().start_time);
}

TEST(ProcFs, AGoneProcessHasNoStartTime) {
  EXPECT_EQ(LiveStartTime(0x3fffffff), 0u);
  EXPECT_FALSE(ReadProcessInfo(0x3fffffff));
}

TEST(ProcStat, ListProcessesHasThisProcessAndItsChildAsReadOneByOne) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  Result<std::vector<ProcessInfo>> all = ListProcesses();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(all.ok()) << all.error().message;
  Result<ProcessInfo> me = ReadProcessInfo(::getpid());
  ASSERT_TRUE(me.ok());
  int seen = 0;
  for (const ProcessInfo& p : all.value()) {
    if (p.pid == ::getpid()) {
      ++seen;
      EXPECT_EQ(p.comm, me.value().comm);
      EXPECT_EQ(p.ppid, me.value().ppid);
      EXPECT_EQ(p.pgid, me.value().pgid);
      EXPECT_EQ(p.start_time, me.value().start_time);
    } else if (p.pid == child) {
      ++seen;
      EXPECT_EQ(p.ppid, ::getpid());
      EXPECT_GE(p.start_time, me.value().start_time);
    }
  }
  EXPECT_EQ(seen, 2);
  EXPECT_GT(all.value().size(), 2u);  // init, at least
}

TEST(ProcFs, BootIdIsSafeInAFileName) {
  const std::string boot = BootId();
  ASSERT_FALSE(boot.empty());
  EXPECT_EQ(boot.find_first_not_of("0123456789abcdefABCDEF-"), std::string::npos) << boot;
  EXPECT_EQ(BootId(), boot);
}

}  // namespace
}  // namespace ix
