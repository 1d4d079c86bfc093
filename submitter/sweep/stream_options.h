// StreamOptions: what `ixsubmit sweep` is told about the sweep's stream
// (the node agents and the sweep's collector), checked before anything is
// written:
//
//   --collector-listen ADDR:PORT  where the sweep's collector listens
//                                 (default 0.0.0.0:0: every interface, a
//                                 free port chosen at the first submit and
//                                 kept, so --resume listens on the same)
//   --collector-url URL           what the jobs are told (default
//                                 http://HOSTNAME:PORT, this host's name)
//   --no-collector                no collector; the jobs report nothing
//   --node-results DIR            each entry's step writes on the node, at
//                                 DIR/SWEEP_ID/INDEX; results reach
//                                 results/INDEX/ only through the collector
//   --agent-socket PATH           the node agent's socket on the nodes
//
// Invariants once checked (CheckStreamOptions): `listen` parses; a URL is
// http:// or https://; --no-collector comes with none of the collector's
// options; paths are absolute and normal.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/base/result.h"

namespace ix {

inline constexpr const char* kDefaultAgentSocket = "/run/inferencex/agent.sock";
inline constexpr const char* kDefaultSweepCollectorListen = "0.0.0.0:0";

struct StreamOptions {
  std::string listen = kDefaultSweepCollectorListen;
  std::string collector_url;  // "" = http://HOSTNAME:PORT
  bool no_collector = false;
  std::string node_results;  // "" = the steps write into the sweep directory
  std::string agent_socket = kDefaultAgentSocket;
  std::vector<std::string> given;  // the stream options given, by name, in order
};

// Where a collector listens: an address or name, and a port (0: a free one,
// which the kernel picks).
struct ListenAddress {
  std::string host;
  int port = 0;
  // "HOST:PORT", "[V6]:PORT" for an IPv6 address.
  std::string ToString() const;
};

// "HOST:PORT" or "[V6]:PORT", PORT 0 to 65535; errors name `option`.
Result<ListenAddress> ParseListenAddress(const std::string& text, const std::string& option);

// Takes the stream option `arg` ("--name" or "--name=value"; `value` gives
// the value of one that takes it); false when `arg` is not a stream option.
bool TakeStreamOption(const std::string& arg, const std::function<std::string()>& value, StreamOptions& o);

// The options together; an error names the option and what it allows.
Status CheckStreamOptions(const StreamOptions& o);

// What the jobs are told: the --collector-url given, else
// http://HOSTNAME:PORT.
std::string CollectorUrlFor(const StreamOptions& o, const std::string& hostname, int port);

// This host's name (gethostname), "localhost" when it has none.
std::string ThisHostName();

}  // namespace ix
