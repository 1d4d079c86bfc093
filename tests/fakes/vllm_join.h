// The join protocol of a multi-node fake engine (tests/fakes/README.md,
// "Multi-node", which shows the bytes): a headless node's HELLO, the head's
// answer, READY once the node has "loaded", and BYE or FAILED when either
// side ends. Text lines, one TCP connection per headless node, kept open
// for the engine's life. Also the head's table of who joined. Pure:
// unit-tested in vllm_join_test.cc.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vllm_layout.h"

namespace ixfake::vllm {

inline constexpr const char* kJoinMagic = "IXFAKE-VLLM/1";

// What a headless node says it is. Data-parallel span: ranks
// start_rank..start_rank+local-1 of dp_size; node span: node_rank of nnodes.
struct Hello {
  Span span = Span::kDataParallel;
  int dp_size = 1;
  int start_rank = 0;
  int local = 0;
  int nnodes = 1, node_rank = 0;
  int tp = 1, pp = 1;  // tensor- and pipeline-parallel sizes
  long pid = 0;
};

// The hello of a headless node with this layout and pid.
Hello hello_for(const Layout& layout, long pid);

// "IXFAKE-VLLM/1 HELLO dp-size=16 start-rank=8 local=8 tp=1 pp=1 pid=42"
// or "IXFAKE-VLLM/1 HELLO nnodes=2 node-rank=1 tp=8 pp=2 pid=42" (no "\n").
std::string hello_line(const Hello& hello);

// Reads a hello line (without "\n"); nullopt with `error` set for anything
// else: another magic, a missing, repeated, unknown or out-of-range field.
std::optional<Hello> parse_hello(std::string_view line, std::string& error);

// "node with data-parallel ranks 8-15" / "node rank 1": a node in log lines.
std::string describe_hello(const Hello& hello);

// The other lines. The head answers a hello with kWelcome or
// "REFUSED <why>"; the node sends kReady when loaded; either side may send
// kBye (a clean stop) or "FAILED <why>" (a crash) before it closes.
inline constexpr const char* kWelcome = "WELCOME";
inline constexpr const char* kReady = "READY";
inline constexpr const char* kBye = "BYE";
inline constexpr const char* kRefusedPrefix = "REFUSED ";
inline constexpr const char* kFailedPrefix = "FAILED ";

// The head's record of its headless nodes: what it still waits for. The
// units are data-parallel ranks (Span::kDataParallel: every rank the head
// does not run) or node ranks (Span::kNodes: 1..nnodes-1). Invariant: the
// admitted units are expected and pairwise distinct; ready is a subset of
// admitted.
class JoinTable {
 public:
  explicit JoinTable(const Layout& head);

  // Empty when the hello fits, and its units are admitted; else why the
  // node is refused (another span or size, units not expected or already
  // taken), naming the fields.
  std::string admit(const Hello& hello);
  // The hello's units (admitted before) are ready.
  void mark_ready(const Hello& hello);
  // Every expected unit is ready.
  bool complete() const { return ready_.size() == expected_.size(); }
  // "data-parallel ranks 8-15" / "node ranks 1-2": what is not ready yet
  // ("" when complete).
  std::string missing() const;

 private:
  std::vector<int> units(const Hello& hello) const;

  Layout head_;
  std::set<int> expected_;
  std::set<int> admitted_;
  std::set<int> ready_;
};

}  // namespace ixfake::vllm
