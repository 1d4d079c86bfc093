#include "submitter/sweep/sweep_db.h"

#include <gtest/gtest.h>

#include <set>

namespace ix {
namespace {

std::set<std::string> g_files;
bool InFiles(const std::string& p) { return g_files.count(p) > 0; }

TEST(DefaultDbPath, XdgStateThenHome) {
  EXPECT_EQ(DefaultDbPath({"HOME=/home/a", "XDG_STATE_HOME=/state/a", "XDG_DATA_HOME=/data/a"}).value(),
            "/state/a/inferencex/ix.db");
  EXPECT_EQ(DefaultDbPath({"HOME=/home/a", "XDG_DATA_HOME=/data/a"}).value(), "/home/a/.local/state/inferencex/ix.db");
  EXPECT_EQ(DefaultDbPath({"HOME=/home/a/"}).value(), "/home/a/.local/state/inferencex/ix.db");
  // The XDG spec: an empty or relative XDG_STATE_HOME is ignored.
  EXPECT_EQ(DefaultDbPath({"XDG_STATE_HOME=", "HOME=/home/a"}).value(), "/home/a/.local/state/inferencex/ix.db");
  EXPECT_EQ(DefaultDbPath({"XDG_STATE_HOME=rel", "HOME=/home/a"}).value(), "/home/a/.local/state/inferencex/ix.db");
  Result<std::string> none = DefaultDbPath({"PATH=/bin"});
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(none.error().message.find("pass --db PATH") != std::string::npos) << none.error().message;
  // Where earlier builds put it.
  EXPECT_EQ(LegacyDbPath({"HOME=/home/a", "XDG_DATA_HOME=/data/a"}).value(), "/data/a/inferencex/ix.db");
  EXPECT_EQ(LegacyDbPath({"HOME=/home/a"}).value(), "/home/a/.local/share/inferencex/ix.db");
  EXPECT_FALSE(LegacyDbPath({"PATH=/bin"}).has_value());
}

TEST(SweepDb, TheStateDirectoryUnlessOnlyTheOldPathHasADatabase) {
  const std::vector<std::string> env = {"HOME=/home/a"};
  g_files = {};
  EXPECT_EQ(ChooseDbPath(std::nullopt, env, InFiles).value().path, "/home/a/.local/state/inferencex/ix.db");
  EXPECT_EQ(ChooseDbPath(std::nullopt, env, InFiles).value().note, "");
  g_files = {"/home/a/.local/share/inferencex/ix.db"};
  DbPathChoice old = ChooseDbPath(std::nullopt, env, InFiles).value();
  EXPECT_EQ(old.path, "/home/a/.local/share/inferencex/ix.db");
  EXPECT_NE(old.note.find(".local/state/inferencex/ix.db"), std::string::npos) << old.note;
  EXPECT_EQ(old.note.find('\n'), std::string::npos);
  g_files.insert("/home/a/.local/state/inferencex/ix.db");
  EXPECT_EQ(ChooseDbPath(std::nullopt, env, InFiles).value().path, "/home/a/.local/state/inferencex/ix.db");
  EXPECT_EQ(ChooseDbPath(std::string("/x/ix.db"), env, InFiles).value().path, "/x/ix.db");
}

TEST(SweepDb, ReadingCommandsNeedADatabaseThere) {
  const std::vector<std::string> env = {"HOME=/home/a"};
  g_files = {};
  Result<std::string> none = ExistingDbPath(std::string("/x/ix.db"), env, InFiles);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no sweep database at /x/ix.db"), std::string::npos) << none.error().message;
  g_files = {"/x/ix.db", "/home/a/.local/share/inferencex/ix.db"};
  EXPECT_EQ(ExistingDbPath(std::string("/x/ix.db"), env, InFiles).value(), "/x/ix.db");
  EXPECT_EQ(ExistingDbPath(std::nullopt, env, InFiles).value(), "/home/a/.local/share/inferencex/ix.db");
}

TEST(SweepDb, NetworkFileSystemsAreNamed) {
  EXPECT_EQ(NetworkFsName(0x6969).value_or(""), "NFS");
  EXPECT_EQ(NetworkFsName(static_cast<long>(0xff534d42)).value_or(""), "CIFS");
  EXPECT_EQ(NetworkFsName(static_cast<long>(0xfe534d42)).value_or(""), "SMB2");
  EXPECT_EQ(NetworkFsName(0x0bd00bd0).value_or(""), "Lustre");
  EXPECT_EQ(NetworkFsName(0x47504653).value_or(""), "GPFS");
  EXPECT_FALSE(NetworkFsName(0xEF53).has_value());     // ext4
  EXPECT_FALSE(NetworkFsName(0x01021994).has_value());  // tmpfs
  // /tmp here is local; a path not there yet is judged by its parent.
  EXPECT_FALSE(NetworkFsOf("/tmp/no/such/dir/ix.db").has_value());
}

}  // namespace
}  // namespace ix
