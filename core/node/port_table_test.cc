#include "core/node/port_table.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/support/test.h"

namespace ix {
namespace {

TEST(LeaseTable, WrittenAndReadBack) {
  test::TempDir d("ix-port-table-test");
  const std::vector<PortLease> table = {
      {"PORT", 20000, 1, LeaseOwner{"7.0", 12, 345, "boot-a", 1700000000}},
      {"SCAN", 20001, 3, LeaseOwner{"7.0", 12, 345, "boot-a", 1700000000}},
  };
  ASSERT_TRUE(WriteLeaseTable(d.path(), table).ok());
  struct stat st{};
  ASSERT_EQ(::stat((d.path() + "/leases").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  Result<std::vector<PortLease>> back = ReadLeaseTable(d.path() + "/leases");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back.value().size(), 2u);
  EXPECT_EQ(back.value()[1].name, "SCAN");
  EXPECT_EQ(back.value()[1].first, 20001);
  EXPECT_EQ(back.value()[1].count, 3);
  EXPECT_EQ(back.value()[1].owner.start_time, 345u);
  EXPECT_EQ(back.value()[1].owner.boot_id, "boot-a");
  // No table yet is an empty one.
  EXPECT_TRUE(ReadLeaseTable(d.path() + "/absent").value().empty());
}

TEST(LeaseTable, AMalformedLineNamesItsPlace) {
  test::TempDir d("ix-port-table-test");
  std::ofstream(d.path() + "/leases") << "20000 1 P 1.0 1 1 boot 0\n\n65535 2 Q 1.0 1 1 boot 0\n";
  Result<std::vector<PortLease>> r = ReadLeaseTable(d.path() + "/leases");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, d.path() + "/leases:3: malformed lease line '65535 2 Q 1.0 1 1 boot 0'; expected: "
                                          "FIRST COUNT NAME OWNER PID START_TIME BOOT_ID TIME");
}

TEST(LeaseTable, TheLockIsExclusive) {
  test::TempDir d("ix-port-table-test");
  Result<UniqueFd> held = LockLeaseTable(d.path(), std::chrono::milliseconds(100));
  ASSERT_TRUE(held.ok()) << held.error().message;
  // flock locks belong to the open file: a second open of the lock waits,
  // and gives up naming this process.
  Result<UniqueFd> second = LockLeaseTable(d.path(), std::chrono::milliseconds(20));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("within 20 ms: held by pid " + std::to_string(::getpid())), std::string::npos)
      << second.error().message;
  held.value().reset();
  EXPECT_TRUE(LockLeaseTable(d.path(), std::chrono::milliseconds(100)).ok());
}

}  // namespace
}  // namespace ix
