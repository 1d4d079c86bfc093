// Subcommand routing for the project's programs (`ixsubmit COMMAND ...`,
// `ixctl COMMAND ...`): one table of commands, each a name, a handler and
// a line of help, and the one place that prints the program's usage, says
// what an unknown command is, and picks the exit status.
//
// Exit statuses: no command, or an unknown one: 2 (usage or the list of
// commands on stderr); --help, -h, help: 0 (usage on stdout); --version,
// where the program has one: 0; otherwise the handler's own.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace ix {

// One command of a program. Invariant: name is non-empty and unique in its
// table; run is set.
struct Subcommand {
  std::string name;
  // Runs the command with the arguments after its name; the exit status.
  std::function<int(const std::vector<std::string>& args)> run;
  std::string help;  // one line, for the usage's command list
};

// A program's commands, in the order its usage lists them.
struct SubcommandTable {
  std::string program;  // "ixsubmit"
  std::string summary;  // one sentence under the usage line
  std::vector<Subcommand> commands;
  std::string version;  // what --version prints ("ixsubmit 1.2.3"); "" = no --version
};

// "Usage: PROG COMMAND [OPTIONS]", the summary, the commands with their
// help in aligned columns, and how to get a command's options.
std::string SubcommandUsage(const SubcommandTable& table);

// Routes `args` (argv without the program name) to its command; prints to
// `out` and `err` only what the routing itself says.
int RunSubcommand(const SubcommandTable& table, const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err);

}  // namespace ix
