#include "submitter/sweep/sweep_schema.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/file_text.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::TempDir;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A connection of its own, as another process would open the file.
SqliteDb OpenPlain(const std::string& path) {
  Result<SqliteDb> db = SqliteDb::Open(path, "a test database", 1000);
  EXPECT_TRUE(db.ok()) << db.error().message;
  return std::move(db).value();
}

TEST(SweepSchema, OpenCreatesParentsPrivatelyAndUsesWal) {
  TempDir d("ix-sweep-schema-test");
  const std::string path = d.path() + "/xdg/inferencex/ix.db";
  {
    Result<SqliteDb> db = OpenSweepDatabase(path);
    ASSERT_TRUE(db.ok()) << db.error().message;
    EXPECT_EQ(db.value().path(), path);
  }
  struct stat st{};
  ASSERT_EQ(::stat((d.path() + "/xdg").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((d.path() + "/xdg/inferencex").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // The file itself says WAL and the schema version, as another reader sees it.
  SqliteDb other = OpenPlain(path);
  SqlStatement mode(other, "PRAGMA journal_mode");
  ASSERT_EQ(mode.Step(), SqlStatement::kRow);
  EXPECT_EQ(mode.Text(0), "wal");
  EXPECT_EQ(ReadSchemaVersion(other).value(), kSweepStoreSchemaVersion);
}

TEST(SweepSchema, CorruptFileIsAClearErrorAndUntouched) {
  TempDir d("ix-sweep-schema-test");
  const std::string path = d.path() + "/ix.db";
  std::string garbage;
  for (int i = 0; i < 8192; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  std::ofstream(path, std::ios::binary) << garbage;
  Result<SqliteDb> s = OpenSweepDatabase(path);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, path + ": not an SQLite database, or a damaged one")) << s.error().message;
  EXPECT_TRUE(Contains(s.error().message, "left as it is")) << s.error().message;
  int err = 0;
  EXPECT_EQ(ReadFileText(path, &err), garbage);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(SweepSchema, NewerSchemaAndForeignDatabasesAreRefused) {
  TempDir d("ix-sweep-schema-test");
  const std::string newer = d.path() + "/newer.db";
  ASSERT_TRUE(OpenSweepDatabase(newer).ok());
  ASSERT_TRUE(OpenPlain(newer).Exec("PRAGMA user_version = 99", "set the version").ok());
  Result<SqliteDb> s = OpenSweepDatabase(newer);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, newer +
                                   ": the database has schema version 99, newer than this build understands (1); "
                                   "use a newer ixsubmit, or another --db");

  const std::string foreign = d.path() + "/foreign.db";
  ASSERT_TRUE(OpenPlain(foreign).Exec("CREATE TABLE t (x)", "create a table").ok());
  Result<SqliteDb> f = OpenSweepDatabase(foreign);
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(Contains(f.error().message, foreign + ": an SQLite database, but not an inferencex one"))
      << f.error().message;

  Result<SqliteDb> dir = OpenSweepDatabase(d.path());
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(Contains(dir.error().message, d.path() + ": ")) << dir.error().message;
  EXPECT_EQ(OpenSweepDatabase("").error().message, "the sweep database path is empty");
}

// Opening an existing database again changes nothing: the schema is made once.
TEST(SweepSchema, MigratingTwiceIsANoOp) {
  TempDir d("ix-sweep-schema-test");
  const std::string path = d.path() + "/ix.db";
  Result<SqliteDb> first = OpenSweepDatabase(path);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(MigrateSweepSchema(first.value()).ok());
  Result<SqliteDb> second = OpenSweepDatabase(path);
  ASSERT_TRUE(second.ok()) << second.error().message;
  SqlStatement tables(second.value(), "SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  ASSERT_EQ(tables.Step(), SqlStatement::kRow);
  EXPECT_EQ(tables.Int(0), 3);
}

}  // namespace
}  // namespace ix
