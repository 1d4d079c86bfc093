#include "vllm_join.h"

#include <map>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// The key=value fields of a hello and their bounds.
struct Field {
  const char* key;
  long long min;
  long long max;
};
constexpr Field kFields[] = {
    {"dp-size", 1, 1024}, {"start-rank", 0, 1023}, {"local", 1, 1024}, {"nnodes", 2, 1024},
    {"node-rank", 1, 1023}, {"tp", 1, 1024},      {"pp", 1, 1024},    {"pid", 1, 1LL << 30},
};

const Field* find_field(std::string_view key) {
  for (const auto& f : kFields) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

// key=value pairs after "MAGIC HELLO"; false with `error` set.
bool read_fields(const std::vector<std::string>& words, std::map<std::string, long long>& out, std::string& error) {
  for (std::size_t i = 2; i < words.size(); ++i) {
    const std::string& w = words[i];
    std::size_t eq = w.find('=');
    const Field* f = eq == std::string::npos ? nullptr : find_field(std::string_view(w).substr(0, eq));
    if (f == nullptr) {
      error = "unknown field '" + w + "'";
      return false;
    }
    auto v = parse_int(std::string_view(w).substr(eq + 1), f->min, f->max);
    if (!v) {
      error = strprintf("field %s: '%s' is not a number from %lld to %lld", f->key, w.c_str() + eq + 1, f->min,
                        f->max);
      return false;
    }
    if (!out.emplace(f->key, *v).second) {
      error = std::string("field ") + f->key + " given twice";
      return false;
    }
  }
  return true;
}

std::vector<std::string> words_of(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    std::size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    if (j > i) out.emplace_back(line.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

Hello hello_for(const Layout& l, long pid) {
  Hello h;
  h.span = l.span;
  h.dp_size = l.dp_size;
  h.start_rank = l.local_ranks.empty() ? 0 : l.local_ranks.front();
  h.local = static_cast<int>(l.local_ranks.size());
  h.nnodes = l.nnodes;
  h.node_rank = l.node_rank;
  h.tp = l.tp;
  h.pp = l.pp;
  h.pid = pid;
  return h;
}

std::string hello_line(const Hello& h) {
  if (h.span == Span::kNodes) {
    return strprintf("%s HELLO nnodes=%d node-rank=%d tp=%d pp=%d pid=%ld", kJoinMagic, h.nnodes, h.node_rank, h.tp,
                     h.pp, h.pid);
  }
  return strprintf("%s HELLO dp-size=%d start-rank=%d local=%d tp=%d pp=%d pid=%ld", kJoinMagic, h.dp_size,
                   h.start_rank, h.local, h.tp, h.pp, h.pid);
}

std::optional<Hello> parse_hello(std::string_view line, std::string& error) {
  std::vector<std::string> words = words_of(line);
  if (words.size() < 2 || words[0] != kJoinMagic || words[1] != "HELLO") {
    error = std::string("not a hello (expected '") + kJoinMagic + " HELLO ...')";
    return std::nullopt;
  }
  std::map<std::string, long long> v;
  if (!read_fields(words, v, error)) return std::nullopt;
  const bool dp = v.count("dp-size") != 0;
  const std::vector<const char*> need = dp ? std::vector<const char*>{"dp-size", "start-rank", "local", "tp", "pp", "pid"}
                                           : std::vector<const char*>{"nnodes", "node-rank", "tp", "pp", "pid"};
  if (v.size() != need.size()) {
    error = dp ? "a data-parallel hello has exactly dp-size, start-rank, local, tp, pp and pid"
               : "a node hello has exactly nnodes, node-rank, tp, pp and pid";
    return std::nullopt;
  }
  for (const char* k : need) {
    if (v.count(k) == 0) {
      error = std::string("field ") + k + " missing";
      return std::nullopt;
    }
  }
  Hello h;
  h.span = dp ? Span::kDataParallel : Span::kNodes;
  auto get = [&](const char* k, int fallback) { return v.count(k) ? static_cast<int>(v[k]) : fallback; };
  h.dp_size = get("dp-size", 1);
  h.start_rank = get("start-rank", 0);
  h.local = get("local", 0);
  h.nnodes = get("nnodes", 1);
  h.node_rank = get("node-rank", 0);
  h.tp = get("tp", 1);
  h.pp = get("pp", 1);
  h.pid = static_cast<long>(v["pid"]);
  return h;
}

std::string describe_hello(const Hello& h) {
  if (h.span == Span::kNodes) return strprintf("node rank %d", h.node_rank);
  std::vector<int> ranks;
  for (int r = h.start_rank; r < h.start_rank + h.local; ++r) ranks.push_back(r);
  return "node with data-parallel ranks " + rank_ranges(ranks);
}

JoinTable::JoinTable(const Layout& head) : head_(head) {
  if (head.span == Span::kNodes) {
    for (int r = 1; r < head.nnodes; ++r) expected_.insert(r);
    return;
  }
  for (int r = 0; r < head.dp_size; ++r) expected_.insert(r);
  for (int r : head.local_ranks) expected_.erase(r);
}

std::vector<int> JoinTable::units(const Hello& h) const {
  if (h.span == Span::kNodes) return {h.node_rank};
  std::vector<int> out;
  for (int r = h.start_rank; r < h.start_rank + h.local; ++r) out.push_back(r);
  return out;
}

std::string JoinTable::admit(const Hello& h) {
  if (h.span != head_.span) {
    return head_.span == Span::kNodes ? "a data-parallel hello, but the head runs --nnodes (tensor/pipeline parallel)"
                                      : "a node-rank hello, but the head runs data-parallel ranks";
  }
  if (h.tp != head_.tp || h.pp != head_.pp) {
    return strprintf("tp=%d pp=%d, but the head has --tensor-parallel-size %d --pipeline-parallel-size %d", h.tp, h.pp,
                     head_.tp, head_.pp);
  }
  if (h.span == Span::kNodes && h.nnodes != head_.nnodes) {
    return strprintf("nnodes=%d, but the head has --nnodes %d", h.nnodes, head_.nnodes);
  }
  if (h.span == Span::kDataParallel && h.dp_size != head_.dp_size) {
    return strprintf("dp-size=%d, but the head has --data-parallel-size %d", h.dp_size, head_.dp_size);
  }
  const std::vector<int> mine = units(h);
  const char* what = h.span == Span::kNodes ? "node rank" : "data-parallel rank";
  for (int u : mine) {
    if (expected_.count(u) == 0) return strprintf("%s %d is not one the head waits for", what, u);
    if (admitted_.count(u) != 0) return strprintf("%s %d has already joined", what, u);
  }
  admitted_.insert(mine.begin(), mine.end());
  return {};
}

void JoinTable::mark_ready(const Hello& h) {
  for (int u : units(h)) {
    if (admitted_.count(u) != 0) ready_.insert(u);
  }
}

std::string JoinTable::missing() const {
  std::vector<int> left;
  for (int u : expected_) {
    if (ready_.count(u) == 0) left.push_back(u);
  }
  if (left.empty()) return {};
  const char* what = head_.span == Span::kNodes ? "node rank" : "data-parallel rank";
  return std::string(what) + (left.size() > 1 ? "s " : " ") + rank_ranges(left);
}

}  // namespace ixfake::vllm
