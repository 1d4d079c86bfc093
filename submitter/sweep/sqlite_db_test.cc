#include "submitter/sweep/sqlite_db.h"

#include <gtest/gtest.h>

#include "tests/support/test.h"

namespace ix {
namespace {

using test::TempDir;

struct Db {
  TempDir dir{"ix-sqlite-db-test"};
  SqliteDb db = Open(dir.path() + "/t.db");

  static SqliteDb Open(const std::string& path) {
    Result<SqliteDb> db = SqliteDb::Open(path, "the test database", 1000);
    EXPECT_TRUE(db.ok()) << db.error().message;
    return std::move(db).value();
  }
};

TEST(SqliteDb, BindsAndReadsEveryKindOfValue) {
  Db t;
  ASSERT_TRUE(t.db.Exec("CREATE TABLE t (i INTEGER, r REAL, s TEXT, n TEXT)", "create").ok());
  const std::optional<std::string> none;
  ASSERT_TRUE(RunSql(t.db, "INSERT INTO t VALUES (?1, ?2, ?3, ?4)", "insert", int64_t{1} << 40, 2.5,
                     std::string("a\0b", 3), none)
                  .ok());
  EXPECT_EQ(t.db.Changes(), 1);
  SqlStatement s(t.db, "SELECT i, r, s, n FROM t");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s.Step(), SqlStatement::kRow);
  EXPECT_EQ(s.Int(0), int64_t{1} << 40);
  EXPECT_EQ(s.OptReal(1), 2.5);
  EXPECT_EQ(s.Text(2), std::string("a\0b", 3));
  EXPECT_TRUE(s.IsNull(3));
  EXPECT_FALSE(s.OptInt(3).has_value());
  EXPECT_EQ(s.Text(3), "");
  EXPECT_EQ(s.Step(), SqlStatement::kDone);
}

TEST(SqliteDb, ErrorsNameThePath) {
  Db t;
  SqlStatement bad(t.db, "SELECT nope FROM nowhere");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.Step(), SqlStatement::kError);
  Status s = RunSql(t.db, "UPDATE nowhere SET x = 1", "touch nowhere");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, t.db.path() + ": cannot prepare to touch nowhere: no such table: nowhere");
  Result<std::vector<int64_t>> rows = SelectRows<int64_t>(
      t.db, "SELECT x FROM nowhere", "cannot read", [](const SqlStatement& r) -> Result<int64_t> { return r.Int(0); });
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().message, t.db.path() + ": cannot read: no such table: nowhere");
  Result<SqliteDb> missing = SqliteDb::Open(t.dir.path() + "/no/such/dir/x.db", "the test database", 1000);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message.rfind(t.dir.path() + "/no/such/dir/x.db: cannot open the test database: ", 0), 0u)
      << missing.error().message;
}

TEST(SqliteDb, AFailedWriteRollsBackEverything) {
  Db t;
  ASSERT_TRUE(t.db.Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)", "create").ok());
  bool duplicate = false;
  Result<Ok> r = t.db.Write<Ok>("insert two", [&]() -> Status {
    if (Status s = RunSql(t.db, "INSERT INTO t VALUES (?1)", "insert 1", int64_t{1}); !s) return s;
    SqlStatement again(t.db, "INSERT INTO t VALUES (1)");
    if (again.Step() == SqlStatement::kDone) return Ok{};
    duplicate = t.db.LastErrorIsDuplicateKey();  // before ROLLBACK clears it
    return t.db.Fail("cannot insert 1 again");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(duplicate);
  EXPECT_NE(r.error().message.find("cannot insert 1 again: UNIQUE constraint failed"), std::string::npos)
      << r.error().message;
  const auto count = [&]() {
    return SelectRows<int64_t>(t.db, "SELECT count(*) FROM t", "count",
                               [](const SqlStatement& s) -> Result<int64_t> { return s.Int(0); })
        .value()
        .at(0);
  };
  EXPECT_EQ(count(), 0);
  // A successful one commits; a read sees it in its snapshot.
  ASSERT_TRUE(t.db.Write<Ok>("insert", [&]() { return RunSql(t.db, "INSERT INTO t VALUES (2)", "insert 2"); }).ok());
  EXPECT_EQ(t.db.Read<int64_t>("count", [&]() -> Result<int64_t> { return count(); }).value(), 1);
}

TEST(SqliteDb, StatementsRunAgainAfterReset) {
  Db t;
  ASSERT_TRUE(t.db.Exec("CREATE TABLE t (k INTEGER, v TEXT)", "create").ok());
  SqlStatement ins(t.db, "INSERT INTO t VALUES (?1, ?2)");
  for (int64_t k = 0; k < 3; ++k) {
    ins.Reset();
    ins.BindAll(k, "v" + std::to_string(k));
    ASSERT_EQ(ins.Step(), SqlStatement::kDone);
  }
  Result<std::vector<std::string>> vs = SelectRows<std::string>(
      t.db, "SELECT v FROM t WHERE k >= ?1 ORDER BY k", "read",
      [](const SqlStatement& s) -> Result<std::string> { return s.Text(0); }, int64_t{1});
  ASSERT_TRUE(vs.ok()) << vs.error().message;
  EXPECT_EQ(vs.value(), (std::vector<std::string>{"v1", "v2"}));
}

}  // namespace
}  // namespace ix
