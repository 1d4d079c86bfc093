#include "spank_plugin/plugin_args.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "core/yaml/yaml_reader.h"

namespace ix {

const std::vector<std::string>& PluginArgKeys() {
  static const std::vector<std::string> kKeys = {"recipe_dir", "port_range", "lease_dir", "run_dir",
                                                 "agent_socket", "memlock", "topology", "stepd"};
  return kKeys;
}

namespace {

Result<MemlockSetting> ParseMemlock(const std::string& v) {
  MemlockSetting m;
  if (v == "unlimited") return m;
  if (v == "keep") {
    m.mode = MemlockSetting::Mode::kKeep;
    return m;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long bytes = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || *end != '\0' || errno != 0 ||
      bytes == 0) {
    return Error{"memlock=" + v + ": expected unlimited, keep or a number of bytes"};
  }
  m.mode = MemlockSetting::Mode::kBytes;
  m.bytes = bytes;
  return m;
}

// The keys whose value is an absolute path, and the field each sets.
const std::pair<const char*, std::string PluginArgs::*> kPathKeys[] = {
    {"recipe_dir", &PluginArgs::recipe_dir}, {"lease_dir", &PluginArgs::lease_dir},
    {"run_dir", &PluginArgs::run_dir},       {"agent_socket", &PluginArgs::agent_socket},
    {"topology", &PluginArgs::topology},     {"stepd", &PluginArgs::stepd}};

// A parsed value into its field, or the parser's refusal.
template <class T, class Refuse>
Status Store(Result<T> parsed, T& field, Refuse refuse) {
  if (!parsed) return refuse(parsed.error().message);
  field = std::move(parsed).value();
  return Ok{};
}

// One KEY=VALUE argument `arg` (already split) into `out`.
Status ParseArg(const std::string& arg, const std::string& key, const std::string& value, PluginArgs& out) {
  auto refuse = [&](const std::string& why) -> Status {
    return Error{"plugstack.conf argument '" + arg + "': " + why};
  };
  for (const auto& [name, field] : kPathKeys) {
    if (key != name) continue;
    if (value[0] != '/') return refuse(key + " must be an absolute path");
    out.*field = value;
    return Ok{};
  }
  if (key == "port_range") return Store(ParsePortRange(value), out.port_range, refuse);
  if (key == "memlock") return Store(ParseMemlock(value), out.memlock, refuse);
  return refuse("unknown key '" + key + "'; keys: " + JoinNames(PluginArgKeys()));
}

}  // namespace

Result<PluginArgs> ParsePluginArgs(const std::vector<std::string>& args) {
  PluginArgs out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq + 1 == a.size()) {
      return Error{"plugstack.conf argument '" + a + "': expected KEY=VALUE; keys: " + JoinNames(PluginArgKeys())};
    }
    if (Status s = ParseArg(a, a.substr(0, eq), a.substr(eq + 1), out); !s) return s.error();
  }
  return out;
}

}  // namespace ix
