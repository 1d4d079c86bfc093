#include "core/base/subcommand.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ix {
namespace {

// A table whose commands record what they were given.
struct Fixture {
  std::vector<std::string> got;
  SubcommandTable table;
  std::ostringstream out, err;

  Fixture() {
    table.program = "prog";
    table.summary = "Do things.";
    table.commands = {
        {"run", [this](const std::vector<std::string>& a) { got = a; return 7; }, "run a thing"},
        {"list", [](const std::vector<std::string>&) { return 0; }, "list the things"},
    };
  }
  int Run(const std::vector<std::string>& args) { return RunSubcommand(table, args, out, err); }
};

TEST(Subcommand, UsageListsTheCommandsInAlignedColumns) {
  Fixture f;
  EXPECT_EQ(SubcommandUsage(f.table),
            "Usage: prog COMMAND [OPTIONS]\n"
            "\n"
            "Do things.\n"
            "\n"
            "Commands:\n"
            "  run    run a thing\n"
            "  list   list the things\n"
            "\n"
            "Run 'prog COMMAND --help' for the options of a command.\n");
}

TEST(Subcommand, RoutesTheRestOfTheArgumentsAndReturnsTheHandlersStatus) {
  Fixture f;
  EXPECT_EQ(f.Run({"run", "-x", "y"}), 7);
  EXPECT_EQ(f.got, (std::vector<std::string>{"-x", "y"}));
  EXPECT_EQ(f.out.str() + f.err.str(), "");
}

TEST(Subcommand, NoCommandIsMisuseWithTheUsageOnStderr) {
  Fixture f;
  EXPECT_EQ(f.Run({}), 2);
  EXPECT_EQ(f.err.str(), SubcommandUsage(f.table));
  EXPECT_EQ(f.out.str(), "");
}

TEST(Subcommand, HelpGoesToStdout) {
  for (const char* h : {"--help", "-h", "help"}) {
    Fixture f;
    EXPECT_EQ(f.Run({h}), 0) << h;
    EXPECT_EQ(f.out.str(), SubcommandUsage(f.table)) << h;
  }
}

TEST(Subcommand, AnUnknownCommandNamesTheKnownOnes) {
  Fixture f;
  EXPECT_EQ(f.Run({"nope", "run"}), 2);
  EXPECT_EQ(f.err.str(), "prog: unknown command 'nope'; commands: run, list\nTry 'prog --help'.\n");
  EXPECT_TRUE(f.got.empty());
}

TEST(Subcommand, VersionOnlyWhereTheProgramHasOne) {
  Fixture f;
  EXPECT_EQ(f.Run({"--version"}), 2);
  EXPECT_NE(f.err.str().find("unknown command '--version'"), std::string::npos);
  Fixture g;
  g.table.version = "prog 1.0";
  EXPECT_EQ(g.Run({"--version"}), 0);
  EXPECT_EQ(g.out.str(), "prog 1.0\n");
}

}  // namespace
}  // namespace ix
