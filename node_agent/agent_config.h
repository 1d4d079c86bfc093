// The settings of ix-node-agent, from its config file
// (/etc/inferencex/agent.conf by default) and its flags. The file has the
// same keys as the long flags, one `key = value` a line; `#` starts a
// comment line; blank lines are skipped. Flags override the file.
//
// Every problem is reported, not only the first, so `--check` can list all
// that is wrong at once: a file's as "FILE:LINE: key 'x': what is allowed",
// a flag's as "--x: what is allowed".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

inline constexpr char kDefaultAgentConfigFile[] = "/etc/inferencex/agent.conf";

// The agent's settings. Invariant of one returned by the functions here
// without problems: every field holds a value its key allows (see
// AgentConfigKeys), and a collector comes with a token file.
struct AgentConfig {
  std::string socket = "/run/inferencex/agent.sock";  // ix-stepd's events (unix datagrams)
  int interval_s = 1;                                 // seconds between samples
  std::string spool = "/var/lib/inferencex/spool";        // what is still to deliver
  std::string collector;                              // http(s) URL; "" = none
  std::string token_file;                             // the collector's bearer token; "" = none
  std::string ca_file;                                // verifies an https collector; "" = the system's CAs
  std::string metrics_listen = "127.0.0.1:9477";      // Prometheus /metrics, ADDR:PORT
  int hang_after_s = 60;                              // seconds without generated tokens
};

// One key of the file (and its flag, `--NAME`).
struct AgentConfigKey {
  const char* name;     // "interval"
  const char* value;    // what --help shows as the value: "SECONDS"
  const char* allowed;  // what a value may be, for errors: "a whole number of seconds from 1 to 3600"
  const char* help;     // one line for --help
};
// The keys, in the order --help lists them.
const std::vector<AgentConfigKey>& AgentConfigKeys();

// Sets `key` to `value` in `config`. Returns "" when done, else what is
// wrong without the location: "key 'interval': expected ..., got '0'"
// or "key 'x': unknown; the keys are ...".
std::string SetAgentConfigKey(AgentConfig& config, std::string_view key, std::string_view value);

// Applies a config file's text over `config` (which keeps what the file
// does not set). Returns the problems, "WHERE:LINE: ...", empty when none;
// a bad line changes nothing. A key given twice is a problem.
std::vector<std::string> ApplyAgentConfigText(AgentConfig& config, std::string_view text, const std::string& where);

// Checks across keys (a collector needs a token file); the problems, empty
// when none.
std::vector<std::string> CheckAgentConfig(const AgentConfig& config);

// What the command line asked for, and the configuration it makes.
struct AgentCommandLine {
  AgentConfig config;
  std::string config_file;   // the file read; "" when the default one is absent
  bool help = false;         // --help: `usage` is set, nothing else is
  bool check = false;        // --check
  bool once = false;         // --once (with --json)
  std::string usage;         // the usage and every flag, for --help
  std::vector<std::string> problems;  // what is wrong with the file or the flags' values
};

// Parses argv (without the program name): the flags, then the config file
// (`--config FILE`, else `default_config_file`; the default may be absent,
// a named one may not), then the flags' values over the file's. Misuse (an
// unknown flag, a missing value, flags that do not go together) is an
// Error, the caller's exit status 2; a bad configuration is `problems`.
Result<AgentCommandLine> ParseAgentCommandLine(const std::vector<std::string>& args,
                                               const std::string& default_config_file = kDefaultAgentConfigFile);

}  // namespace ix
