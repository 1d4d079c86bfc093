// UsageExitStatus: what the collector's commands (`ixsubmit serve`,
// `ixsubmit events`) do with their parsed command line before their work:
// on a misuse, the error and the usage on stderr (exit status 2); on
// --help, the usage on stdout (0).
#pragma once

#include <cstdio>
#include <optional>

#include "core/base/result.h"

namespace ix {

// The exit status when `ixsubmit COMMAND` is done before its work (a
// misuse or --help), nullopt to go on with parsed.value(). CommandLine
// has a bool `help`.
template <class CommandLine>
std::optional<int> UsageExitStatus(const char* command, const Result<CommandLine>& parsed, const char* usage) {
  if (!parsed) {
    std::fprintf(stderr, "ixsubmit %s: error: %s\n%s", command, parsed.error().message.c_str(), usage);
    return 2;
  }
  if (parsed.value().help) {
    std::fputs(usage, stdout);
    return 0;
  }
  return std::nullopt;
}

}  // namespace ix
