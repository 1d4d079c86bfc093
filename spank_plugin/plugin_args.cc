#include "spank_plugin/plugin_args.h"

namespace ix {

Result<PluginArgs> ParsePluginArgs(const std::vector<std::string>& args) {
  PluginArgs out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == a.size()) {
      return Error{"plugstack.conf argument '" + a + "': expected KEY=VALUE; keys: recipe_dir"};
    }
    const std::string value = a.substr(eq + 1);
    if (key == "recipe_dir") {
      out.recipe_dir = value;
    } else {
      return Error{"plugstack.conf argument '" + a + "': unknown key '" + key +
                   "'; keys: recipe_dir"};
    }
  }
  return out;
}

}  // namespace ix
