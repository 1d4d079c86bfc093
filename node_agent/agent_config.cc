#include "node_agent/agent_config.h"

#include <sys/un.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "core/process/http_probe.h"
#include "node_agent/metrics_server.h"

namespace ix {
namespace po = boost::program_options;

namespace {

// The longest path a unix socket address holds (sun_path, NUL included).
constexpr size_t kMaxSocketPath = sizeof(sockaddr_un::sun_path) - 1;

bool AbsolutePath(std::string_view v) { return !v.empty() && v.front() == '/' && v.find('\0') == v.npos; }

bool SocketPath(std::string_view v) { return AbsolutePath(v) && v.size() <= kMaxSocketPath; }

bool WholeSeconds(std::string_view v, uint64_t max, int& out) {
  uint64_t n = 0;
  if (!ParseUnsigned(v, n) || n < 1 || n > max) return false;
  out = static_cast<int>(n);
  return true;
}

// An http:// or https:// URL as the socket prober would take it (the
// https one as its http twin: TLS changes nothing in the URL's syntax).
bool CollectorUrl(std::string_view v) {
  constexpr std::string_view kHttps = "https://";
  if (v.substr(0, kHttps.size()) == kHttps) return ParseHttpUrl("http://" + std::string(v.substr(kHttps.size()))).ok();
  return v.substr(0, 7) == "http://" && ParseHttpUrl(v).ok();
}

// Stores `v` in `field` when `allowed`; returns `allowed`.
bool StoreIf(bool allowed, std::string& field, std::string_view v) {
  if (allowed) field = v;
  return allowed;
}

// A key, and how a value of it is checked and stored.
struct KeyDef {
  AgentConfigKey key;
  bool (*set)(AgentConfig& config, std::string_view value);  // false: not allowed, config unchanged
};

const std::vector<KeyDef>& KeyDefs() {
  static const std::vector<KeyDef> defs = {
      {{"socket", "PATH", "an absolute path of at most 107 bytes (a unix socket address's limit)",
        "unix datagram socket ix-stepd sends its events to (default /run/inferencex/agent.sock)"},
       [](AgentConfig& c, std::string_view v) { return StoreIf(SocketPath(v), c.socket, v); }},
      {{"interval", "SECONDS", "a whole number of seconds from 1 to 3600",
        "seconds between two samples of the node (default 1)"},
       [](AgentConfig& c, std::string_view v) { return WholeSeconds(v, 3600, c.interval_s); }},
      {{"spool", "DIR", "an absolute path", "directory of what is still to deliver (default /var/lib/inferencex/spool)"},
       [](AgentConfig& c, std::string_view v) { return StoreIf(AbsolutePath(v), c.spool, v); }},
      {{"collector", "URL",
        "an http:// or https:// URL with a host (a name, an IPv4 address or a bracketed IPv6 address), "
        "an optional :PORT and path, no credentials and no spaces",
        "the collector's URL (default: none)"},
       [](AgentConfig& c, std::string_view v) { return StoreIf(CollectorUrl(v), c.collector, v); }},
      {{"token-file", "FILE", "an absolute path", "file holding the collector's bearer token (default: none)"},
       [](AgentConfig& c, std::string_view v) { return StoreIf(AbsolutePath(v), c.token_file, v); }},
      {{"ca-file", "FILE", "an absolute path",
        "PEM certificates to verify an https:// collector by (default: the system's)"},
       [](AgentConfig& c, std::string_view v) { return StoreIf(AbsolutePath(v), c.ca_file, v); }},
      {{"metrics-listen", "ADDR:PORT",
        "ADDR:PORT with an IPv4 address or a bracketed IPv6 address ([::1]) and a port from 0 to 65535 (0: any free one)",
        "where Prometheus /metrics is served (default 127.0.0.1:9477)"},
       [](AgentConfig& c, std::string_view v) { return StoreIf(ParseListenAddress(v).ok(), c.metrics_listen, v); }},
      {{"hang-after", "SECONDS", "a whole number of seconds from 1 to 86400",
        "seconds an engine with requests in flight may generate no token before it counts as hung (default 60)"},
       [](AgentConfig& c, std::string_view v) { return WholeSeconds(v, 86400, c.hang_after_s); }},
  };
  return defs;
}

const KeyDef* FindKey(std::string_view name) {
  for (const KeyDef& d : KeyDefs()) {
    if (name == d.key.name) return &d;
  }
  return nullptr;
}

std::string KeyNames() {
  std::string names;
  for (const KeyDef& d : KeyDefs()) names += (names.empty() ? "" : ", ") + std::string(d.key.name);
  return names;
}

// Stores `value` under `def`; "" when done, else what was expected and got.
std::string SetKey(const KeyDef& def, AgentConfig& config, std::string_view value) {
  if (def.set(config, value)) return "";
  return "expected " + std::string(def.key.allowed) + ", got '" + std::string(value) + "'";
}

}  // namespace

const std::vector<AgentConfigKey>& AgentConfigKeys() {
  static const std::vector<AgentConfigKey> keys = [] {
    std::vector<AgentConfigKey> k;
    for (const KeyDef& d : KeyDefs()) k.push_back(d.key);
    return k;
  }();
  return keys;
}

std::string SetAgentConfigKey(AgentConfig& config, std::string_view key, std::string_view value) {
  const std::string prefix = "key '" + std::string(key) + "': ";
  const KeyDef* def = FindKey(key);
  if (!def) return prefix + "unknown; the keys are " + KeyNames();
  std::string wrong = SetKey(*def, config, value);
  return wrong.empty() ? wrong : prefix + wrong;
}

std::vector<std::string> ApplyAgentConfigText(AgentConfig& config, std::string_view text, const std::string& where) {
  std::vector<std::string> problems;
  std::map<std::string, size_t, std::less<>> first_line;  // key -> the line that set it
  size_t number = 0;
  for (std::string_view line : Lines(text)) {
    const std::string at = where + ":" + std::to_string(++number) + ": ";
    const std::string_view body = Trim(line);
    if (body.empty() || body.front() == '#') continue;
    const size_t eq = body.find('=');
    if (eq == body.npos) {
      problems.push_back(at + "expected 'key = value', a '#' comment or a blank line");
      continue;
    }
    const std::string_view key = Trim(body.substr(0, eq));
    const std::string_view value = Trim(body.substr(eq + 1));
    if (FindKey(key)) {
      const auto [seen, fresh] = first_line.emplace(std::string(key), number);
      if (!fresh) {
        problems.push_back(at + "key '" + std::string(key) + "': given twice (first on line " +
                           std::to_string(seen->second) + "); each key at most once");
        continue;
      }
    }
    if (std::string wrong = SetAgentConfigKey(config, key, value); !wrong.empty()) problems.push_back(at + wrong);
  }
  return problems;
}

std::vector<std::string> CheckAgentConfig(const AgentConfig& config) {
  std::vector<std::string> problems;
  if (!config.collector.empty() && config.token_file.empty()) {
    problems.push_back("key 'collector' is set but 'token-file' is not: the collector takes only requests "
                       "with its bearer token");
  }
  return problems;
}

namespace {

const char kUsage[] =
    "Usage: ix-node-agent [--config FILE] [flags]          run the agent\n"
    "       ix-node-agent --check [--config FILE] [flags]  validate the configuration\n"
    "       ix-node-agent --once --json                    print one sample of this node\n"
    "\n"
    "The inferencex node agent: receives the steps' events on its socket, samples\n"
    "the node and its GPUs (NVML) every interval, writes each step's\n"
    "gpu_metrics.csv, serves Prometheus /metrics and delivers everything to the\n"
    "collector from its spool. Stops on SIGTERM or SIGINT.\n"
    "\n"
    "The config file has the long flags' keys, one 'key = value' a line;\n"
    "flags override it.\n"
    "\n"
    "Options:\n";

po::options_description AgentOptions() {
  po::options_description opts;
  opts.add_options()
      ("config", po::value<std::string>()->value_name("FILE"),
       "the config file; by default /etc/inferencex/agent.conf, which may be absent")
      ("check", po::bool_switch(), "validate the configuration: say what is wrong (exit 1) or 'configuration ok'")
      ("once", po::bool_switch(), "take one sample of the node, print it and exit (with --json)")
      ("json", po::bool_switch(), "print the sample as JSON")
      ("help,h", "show this help");
  for (const KeyDef& d : KeyDefs()) {
    opts.add_options()(d.key.name, po::value<std::string>()->value_name(d.key.value), d.key.help);
  }
  return opts;
}

// Reads the config file into `line`'s config; a missing default is fine.
void ReadConfigFile(AgentCommandLine& line, const std::string& path, bool named) {
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err == ENOENT && !named) return;
  if (err) {
    line.problems.push_back(path + ": cannot read: " + std::strerror(err));
    return;
  }
  line.config_file = path;
  for (std::string& p : ApplyAgentConfigText(line.config, text, path)) line.problems.push_back(std::move(p));
}

}  // namespace

Result<AgentCommandLine> ParseAgentCommandLine(const std::vector<std::string>& args,
                                               const std::string& default_config_file) {
  const po::options_description opts = AgentOptions();
  po::variables_map vm;
  const po::positional_options_description none;  // so a stray word is an error, not ignored
  try {
    po::store(po::command_line_parser(args).options(opts).positional(none).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return Error{e.what()};
  }
  AgentCommandLine line;
  if (vm.count("help")) {
    std::ostringstream usage;
    usage << kUsage << opts;
    line.help = true;
    line.usage = usage.str();
    return line;
  }
  line.check = vm["check"].as<bool>();
  line.once = vm["once"].as<bool>();
  const bool json = vm["json"].as<bool>();
  if (line.check && line.once) return Error{"--check and --once do not go together"};
  if (line.once && !json) return Error{"--once prints JSON only (so far): add --json"};
  if (json && !line.once) return Error{"--json goes with --once"};

  const bool named = vm.count("config") > 0;
  ReadConfigFile(line, named ? vm["config"].as<std::string>() : default_config_file, named);
  for (const KeyDef& d : KeyDefs()) {
    if (!vm.count(d.key.name)) continue;
    std::string wrong = SetKey(d, line.config, vm[d.key.name].as<std::string>());
    if (!wrong.empty()) line.problems.push_back("--" + std::string(d.key.name) + ": " + wrong);
  }
  for (std::string& p : CheckAgentConfig(line.config)) line.problems.push_back(std::move(p));
  return line;
}

}  // namespace ix
