#include "ixctl/command_line.h"

#include <iostream>

namespace ix {
namespace po = boost::program_options;

std::optional<int> ParseCommandOptions(const std::string& command, const char* usage,
                                       const po::options_description& opts, const std::vector<std::string>& args,
                                       po::variables_map& vm) {
  try {
    // No positional arguments: a stray word is misuse, not silently ignored.
    const po::positional_options_description none;
    po::store(po::command_line_parser(args).options(opts).positional(none).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "ixctl " << command << ": " << e.what() << "\nTry 'ixctl " << command << " --help'.\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << usage << opts;
    return 0;
  }
  return std::nullopt;
}

}  // namespace ix
