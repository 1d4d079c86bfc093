#include "core/base/proc_fs.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace ix {
namespace {

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

TEST(ProcFs, ListsThisProcess) {
  Result<std::vector<ProcessInfo>> all = ListProcesses();
  ASSERT_TRUE(all);
  bool found = false;
  for (const ProcessInfo& p : all.value()) found = found || p.pid == ::getpid();
  EXPECT_TRUE(found);
}

TEST(ProcFs, BootIdIsSafeInAFileName) {
  const std::string boot = BootId();
  ASSERT_FALSE(boot.empty());
  EXPECT_EQ(boot.find_first_not_of("0123456789abcdefABCDEF-"), std::string::npos) << boot;
  EXPECT_EQ(BootId(), boot);
}

}  // namespace
}  // namespace ix
