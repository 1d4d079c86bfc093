// The process tree: descendants by parent pid, IsRunning against a
// recycled pid.
#include "core/process/process_tree.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ix {
namespace {

// ---- /proc (the parsing itself: core/base/proc_fs_test.cc) ------------------

TEST(ProcStat, ReadsThisProcess) {
  Result<ProcessInfo> me = ReadProcessInfo(::getpid());
  ASSERT_TRUE(me.ok()) << me.error().message;
  EXPECT_EQ(me.value().pid, ::getpid());
  EXPECT_EQ(me.value().ppid, ::getppid());
  EXPECT_EQ(me.value().pgid, ::getpgrp());
  EXPECT_GT(me.value().start_time, 0u);
  EXPECT_TRUE(IsRunning(me.value().id()));
  EXPECT_FALSE(IsRunning({me.value().pid, me.value().start_time + 1}));  // a recycled pid
  EXPECT_FALSE(ReadProcessInfo(0x3fffffff).ok());
}


TEST(ProcessTree, DescendantsByParentPidBreadthFirst) {
  auto P = [](pid_t pid, pid_t ppid) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.comm = "p" + std::to_string(pid);
    return p;
  };
  const std::vector<ProcessInfo> table = {P(1, 0), P(10, 1), P(12, 11), P(11, 10), P(13, 10), P(20, 1), P(14, 12)};
  std::vector<pid_t> got;
  for (const ProcessInfo& p : DescendantsIn(table, 10)) got.push_back(p.pid);
  EXPECT_EQ(got, (std::vector<pid_t>{11, 13, 12, 14}));
  EXPECT_TRUE(DescendantsIn(table, 14).empty());
}

}  // namespace
}  // namespace ix
