#include "core/base/subcommand.h"

#include <algorithm>
#include <ostream>

namespace ix {

std::string SubcommandUsage(const SubcommandTable& table) {
  size_t width = 0;
  for (const Subcommand& c : table.commands) width = std::max(width, c.name.size());
  std::string usage = "Usage: " + table.program + " COMMAND [OPTIONS]\n\n" + table.summary + "\n\nCommands:\n";
  // Three spaces after the longest name, the help lines starting in one column.
  for (const Subcommand& c : table.commands) {
    usage += "  " + c.name + std::string(width + 3 - c.name.size(), ' ') + c.help + "\n";
  }
  return usage + "\nRun '" + table.program + " COMMAND --help' for the options of a command.\n";
}

int RunSubcommand(const SubcommandTable& table, const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err) {
  if (args.empty()) {
    err << SubcommandUsage(table);
    return 2;
  }
  const std::string& command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    out << SubcommandUsage(table);
    return 0;
  }
  if (command == "--version" && !table.version.empty()) {
    out << table.version << "\n";
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const Subcommand& c : table.commands) {
    if (c.name == command) return c.run(rest);
  }
  std::string names;
  for (const Subcommand& c : table.commands) names += (names.empty() ? "" : ", ") + c.name;
  err << table.program << ": unknown command '" << command << "'; commands: " << names << "\nTry '"
      << table.program << " --help'.\n";
  return 2;
}

}  // namespace ix
