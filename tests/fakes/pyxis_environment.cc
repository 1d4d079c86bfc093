#include "pyxis_environment.h"

#include <algorithm>
#include <fstream>

namespace ixfake::pyxis {

EnvList ReadEnvironment(const std::string& file) {
  EnvList env;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    line = line.substr(b);
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    const size_t eq = line.find('=');
    if (eq == 0 || eq == std::string::npos) continue;
    std::string name = line.substr(0, eq), value = line.substr(eq + 1);
    if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
      continue;
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ' || value.back() == '\t')) value.pop_back();
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    env.emplace_back(name, value);
  }
  return env;
}

std::string ImportEnvironment(spank_t sp, const EnvList& env, const std::vector<std::string>& keep_host) {
  for (const char* name : {"LANG", "LANGUAGE", "LC_ALL"}) spank_unsetenv(sp, name);
  for (const auto& [name, value] : env) {
    if (std::find(keep_host.begin(), keep_host.end(), name) != keep_host.end()) continue;
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) return "cannot set " + name;
  }
  return "";
}

}  // namespace ixfake::pyxis
