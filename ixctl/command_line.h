// What every ixctl command does the same way with its options: parse them
// with Boost.Program_options, answer --help, and report misuse.
#pragma once

#include <boost/program_options.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ix {

// Parses `args` by `opts` into `vm`. Returns the exit status when the
// command is done: 2 on misuse ("ixctl COMMAND: what" and where help is, on
// stderr), 0 after --help (`usage` and the options, on stdout); nullopt to
// go on. `command` is what follows "ixctl": "place", "ports lease".
std::optional<int> ParseCommandOptions(const std::string& command, const char* usage,
                                       const boost::program_options::options_description& opts,
                                       const std::vector<std::string>& args, boost::program_options::variables_map& vm);

}  // namespace ix
