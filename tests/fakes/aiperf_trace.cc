#include "aiperf_trace.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "chat_prompt.h"
#include "fake_common.h"
#include "token_units.h"

namespace ixfake::aiperf {
namespace {

using rapidjson::Value;

// Tokens of a one-message chat prompt before its content: the message's
// framing plus the word "user:".
const int kFraming = chat_message_tokens("user", "");

std::optional<int> int_field(const Value& v, const char* a, const char* b) {
  for (const char* key : {a, b}) {
    if (key != nullptr && v.HasMember(key) && v[key].IsNumber()) return static_cast<int>(v[key].GetDouble());
  }
  return std::nullopt;
}

// One n/s request into a step; returns an error or "".
std::string read_step(const Value& r, Step& s) {
  auto in = int_field(r, "in", "input_length");
  auto out = int_field(r, "out", "output_length");
  if (!in || *in < 1) return "a request has no positive \"in\"";
  if (!out || *out < 0) return "a request has no \"out\"";
  s.input_len = *in;
  s.output_len = std::max(*out, 1);
  if (r.HasMember("hash_ids")) {
    if (!r["hash_ids"].IsArray()) return "\"hash_ids\" is not an array";
    for (const Value& h : r["hash_ids"].GetArray()) {
      if (!h.IsUint64()) return "a hash id is not a non-negative integer";
      s.hash_ids.push_back(h.GetUint64());
    }
  }
  if (r.HasMember("think_time") && r["think_time"].IsNumber()) s.gap_s = std::max(0.0, r["think_time"].GetDouble());
  return {};
}

std::string read_trace(const Value& d, Trace& t) {
  if (!d.IsObject()) return "not a JSON object";
  if (!d.HasMember("id") || !d["id"].IsString() || d["id"].GetStringLength() == 0) return "no string \"id\"";
  t.id = d["id"].GetString();
  if (d.HasMember("block_size")) {
    if (!d["block_size"].IsInt() || d["block_size"].GetInt() < 1) return "\"block_size\" is not a positive integer";
    t.block_size = d["block_size"].GetInt();
  }
  if (!d.HasMember("requests") || !d["requests"].IsArray()) return "no \"requests\" array";
  int main_turn = 0;
  int agents = 0;
  for (const Value& r : d["requests"].GetArray()) {
    if (!r.IsObject() || !r.HasMember("type") || !r["type"].IsString()) return "a request has no \"type\"";
    const std::string type = r["type"].GetString();
    if (type == "subagent") {
      ++agents;
      std::string agent = r.HasMember("agent_id") && r["agent_id"].IsString() ? r["agent_id"].GetString()
                                                                              : strprintf("agent_%03d", agents);
      if (!r.HasMember("requests") || !r["requests"].IsArray()) return "subagent " + agent + " has no \"requests\"";
      int turn = 0;
      for (const Value& inner : r["requests"].GetArray()) {
        if (!inner.IsObject()) return "subagent " + agent + ": a request is not an object";
        Step s;
        s.conversation_suffix = "::sa:" + agent;
        s.turn_index = turn++;
        if (std::string e = read_step(inner, s); !e.empty()) return "subagent " + agent + ": " + e;
        t.steps.push_back(std::move(s));
      }
    } else if (type == "n" || type == "s") {
      Step s;
      s.turn_index = main_turn++;
      if (std::string e = read_step(r, s); !e.empty()) return e;
      t.steps.push_back(std::move(s));
    }  // other types (tool calls, markers) carry no request
  }
  if (t.steps.empty()) return "trace " + t.id + " has no requests";
  return {};
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

int Trace::peak_input() const {
  int peak = 0;
  for (const Step& s : steps) peak = std::max(peak, s.input_len);
  return peak;
}

std::optional<std::vector<Trace>> parse_traces(const std::string& text, std::string& error) {
  std::vector<Trace> traces;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    rapidjson::Document d;
    d.Parse(line.c_str());
    Trace t;
    std::string why = d.HasParseError() ? std::string("not JSON") : read_trace(d, t);
    if (!why.empty()) {
      error = strprintf("line %d: %s", line_no, why.c_str());
      return std::nullopt;
    }
    traces.push_back(std::move(t));
  }
  if (traces.empty()) {
    error = "no traces";
    return std::nullopt;
  }
  return traces;
}

std::optional<std::vector<Trace>> load_traces(const std::string& path, std::string& error) {
  std::ifstream f(path);
  if (!f) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto traces = parse_traces(ss.str(), error);
  if (!traces) error = path + ": " + error;
  return traces;
}

std::string prompt_content(const Trace& trace, const Step& step, std::uint64_t salt) {
  const int bs = trace.block_size;
  int need = step.input_len - kFraming;
  int pos = kFraming;  // position in the prompt's token stream
  std::string out;
  auto append = [&out](const std::string& w) {
    if (!out.empty()) out += ' ';
    out += w;
  };
  while (need > 0) {
    const auto block = static_cast<std::size_t>(pos / bs);
    if (block >= step.hash_ids.size()) {
      const std::string key = strprintf("%llu:%s%s:%d", static_cast<unsigned long long>(salt), trace.id.c_str(),
                                        step.conversation_suffix.c_str(), step.turn_index);
      append(client::filler_words(need, hash64(key)));
      break;
    }
    const std::string key = strprintf("%llu:%s:%llu", static_cast<unsigned long long>(salt), trace.id.c_str(),
                                      static_cast<unsigned long long>(step.hash_ids[block]));
    const std::vector<std::string> words = split_words(client::filler_words(bs, hash64(key)));
    const int off = pos % bs;
    const int take = std::min(bs - off, need);
    for (int i = 0; i < take; ++i) append(words[static_cast<std::size_t>(off + i)]);
    pos += take;
    need -= take;
  }
  if (out.empty()) out = "go";  // a prompt shorter than its framing: one word, longer than asked
  return out;
}

LanePlanner::LanePlanner(unsigned long long seed, int lane, double min_ratio, double max_ratio)
    : rng_(hash64(strprintf("aiperf-lane:%llu:%d", seed, lane))), min_ratio_(min_ratio), max_ratio_(max_ratio) {}

std::size_t LanePlanner::next_trace(std::size_t trace_count) {
  return static_cast<std::size_t>(rng_() % trace_count);
}

int LanePlanner::start_step(int steps) {
  int hi = std::min(static_cast<int>(max_ratio_ * steps), steps - 2);
  int lo = static_cast<int>(min_ratio_ * steps);
  hi = std::clamp(hi, 0, std::max(steps - 1, 0));
  lo = std::clamp(lo, 0, hi);
  return lo + static_cast<int>(rng_() % static_cast<unsigned long long>(hi - lo + 1));
}

std::pair<int, int> PrefixTracker::observe(const std::vector<std::uint64_t>& hash_ids) {
  int hit = 0;
  while (static_cast<std::size_t>(hit) < hash_ids.size() && seen_.count(hash_ids[static_cast<std::size_t>(hit)]) != 0) {
    ++hit;
  }
  seen_.insert(hash_ids.begin(), hash_ids.end());
  return {hit, static_cast<int>(hash_ids.size())};
}

}  // namespace ixfake::aiperf
