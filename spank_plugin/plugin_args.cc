#include "spank_plugin/plugin_args.h"

#include <cerrno>
#include <cstdlib>

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

}  // namespace

Result<PluginArgs> ParsePluginArgs(const std::vector<std::string>& args) {
  PluginArgs out;
  const std::string keys = JoinNames(PluginArgKeys());
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq + 1 == a.size()) {
      return Error{"plugstack.conf argument '" + a + "': expected KEY=VALUE; keys: " + keys};
    }
    const std::string key = a.substr(0, eq);
    const std::string value = a.substr(eq + 1);
    auto path = [&](std::string& field) -> Status {
      if (value[0] != '/') {
        return Error{"plugstack.conf argument '" + a + "': " + key + " must be an absolute path"};
      }
      field = value;
      return Ok{};
    };
    Status s = Ok{};
    if (key == "recipe_dir") {
      s = path(out.recipe_dir);
    } else if (key == "lease_dir") {
      s = path(out.lease_dir);
    } else if (key == "run_dir") {
      s = path(out.run_dir);
    } else if (key == "agent_socket") {
      s = path(out.agent_socket);
    } else if (key == "topology") {
      s = path(out.topology);
    } else if (key == "stepd") {
      s = path(out.stepd);
    } else if (key == "port_range") {
      Result<PortRange> r = ParsePortRange(value);
      if (r) {
        out.port_range = r.value();
      } else {
        s = Error{"plugstack.conf argument '" + a + "': " + r.error().message};
      }
    } else if (key == "memlock") {
      Result<MemlockSetting> m = ParseMemlock(value);
      if (m) {
        out.memlock = m.value();
      } else {
        s = Error{"plugstack.conf argument '" + a + "': " + m.error().message};
      }
    } else {
      s = Error{"plugstack.conf argument '" + a + "': unknown key '" + key + "'; keys: " + keys};
    }
    if (!s) return s.error();
  }
  return out;
}

}  // namespace ix
