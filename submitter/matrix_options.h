// The matrix selection flags shared by `ixsubmit matrix` and `ixsubmit
// sweep` (config files, keys or filters, eval flags), parsed with argparse's
// conventions so misuse reads like the reference generator's: the last
// occurrence of an option wins, errors name the option.
#pragma once

#include <boost/program_options.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/matrix/matrix.h"
#include "core/matrix/matrix_buckets.h"
#include "core/matrix/matrix_config.h"
#include "core/matrix/matrix_runners.h"
#include "core/base/result.h"

namespace ix {

// Misuse: argparse-style message, exit 2.
struct Misuse {
  std::string message;
};

// Options by long name: the values of their last occurrence, and the order
// in which they first appeared.
class Parsed {
 public:
  std::map<std::string, std::vector<std::string>> last;
  std::vector<std::string> order;

  bool Has(const std::string& name) const { return last.count(name) != 0; }
  const std::vector<std::string>& Values(const std::string& name) const { return last.at(name); }
  std::optional<std::string> One(const std::string& name) const {
    if (!Has(name)) return std::nullopt;
    return last.at(name).back();
  }
};

int64_t ParseInt(const std::string& option, const std::string& text);       // throws Misuse
int64_t ParsePositive(const std::string& option, const std::string& text);  // throws Misuse
// The value of option args[i]: after its '=' ("--time=1:00"), else the next
// argument (i moves past it); throws Misuse when there is none.
std::string TakeValue(const std::vector<std::string>& args, size_t& i);

// full: full-sweep's filters, else test-config's --config-keys / --conc;
// bucket_flags: --buckets, --trim-conc, --canary (ixsubmit matrix only).
boost::program_options::options_description MatrixOptions(bool full, bool bucket_flags);
// Throws Misuse on unknown options, positional arguments and bad syntax.
Parsed ParseOptions(const std::vector<std::string>& args, const boost::program_options::options_description& opts);
// The generator's options from the flags; throws Misuse.
SweepOptions ToSweepOptions(const Parsed& p, bool full);

}  // namespace ix
