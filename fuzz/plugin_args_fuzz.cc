// libFuzzer target for the plugstack.conf arguments of the plugin
// (spank_plugin/plugin_args.h ParsePluginArgs): the input is split on
// spaces, tabs and newlines into arguments, as Slurm splits the line (and
// at NUL bytes: Slurm hands the plugin C strings, which cannot hold one).
// Errors are expected; crashes, leaks, UB, hangs and a successful parse that
// breaks the documented invariants (a valid port range, absolute paths, a
// memlock byte count that is the decimal number written) are bugs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "spank_plugin/plugin_args.h"

namespace {

constexpr std::string_view kSeparators(" \t\n\0", 4);

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = text.find_first_not_of(kSeparators, i);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(text.find_first_of(kSeparators, start), text.size());
    out.emplace_back(text.substr(start, end - start));
    i = end;
  }
  return out;
}

void CheckAbsolute(const std::string& path, const char* key) {
  ixfuzz::Check(!path.empty() && path[0] == '/', std::string(key) + " is not an absolute path: " + path);
}

// The value of the last memlock= argument, or "" when there is none.
std::string LastMemlock(const std::vector<std::string>& args) {
  std::string v;
  for (const std::string& a : args) {
    if (a.rfind("memlock=", 0) == 0) v = a.substr(8);
  }
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = Words(ixfuzz::AsText(data, size));
  ix::Result<ix::PluginArgs> r = ix::ParsePluginArgs(args);
  if (!r) {
    ixfuzz::Check(r.error().message.find("plugstack.conf argument") != std::string::npos,
                  "an error that does not name the argument: " + r.error().message);
    return 0;
  }
  const ix::PluginArgs& a = r.value();
  ixfuzz::Check(a.port_range.lo >= 1 && a.port_range.lo <= a.port_range.hi && a.port_range.hi <= 65535,
                "an invalid port range was accepted: " + a.port_range.ToString());
  CheckAbsolute(a.recipe_dir, "recipe_dir");
  CheckAbsolute(a.lease_dir, "lease_dir");
  CheckAbsolute(a.run_dir, "run_dir");
  CheckAbsolute(a.stepd, "stepd");
  if (!a.agent_socket.empty()) CheckAbsolute(a.agent_socket, "agent_socket");
  if (!a.topology.empty()) CheckAbsolute(a.topology, "topology");
  if (a.memlock.mode == ix::MemlockSetting::Mode::kBytes) {
    const std::string v = LastMemlock(args);
    ixfuzz::Check(a.memlock.bytes > 0, "memlock=0 was accepted");
    ixfuzz::Check(!v.empty() && v.find_first_not_of("0123456789") == std::string::npos,
                  "memlock=" + v + " was accepted as " + std::to_string(a.memlock.bytes) + " bytes");
  }
  return 0;
}
