#include "vllm_api.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <utility>

#include <unistd.h>

#include "fake_common.h"
#include "vllm_engine_cores.h"

namespace ixfake::vllm {
namespace {

// The options of a completion request: `max_tokens`/`max_completion_tokens`
// (the last given wins; default 16), `stream` and vLLM's `ignore_eos`.
struct Options {
  int max_tokens = 16;
  bool stream = false;
  bool ignore_eos = false;
};

// Reads `name` as a boolean (absent or null: unchanged); false with `error` set.
bool read_bool(const rapidjson::Document& doc, const char* name, bool& out, std::string& error) {
  if (!doc.HasMember(name) || doc[name].IsNull()) return true;
  if (!doc[name].IsBool()) {
    error = std::string("'") + name + "' must be a boolean";
    return false;
  }
  out = doc[name].GetBool();
  return true;
}

// Returns the 400 error message, empty on success.
std::string read_options(const rapidjson::Document& doc, Options& o) {
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!doc.HasMember(key) || doc[key].IsNull()) continue;
    if (!doc[key].IsInt() || doc[key].GetInt() < 1) return std::string("'") + key + "' must be a positive integer";
    o.max_tokens = doc[key].GetInt();
  }
  std::string error;
  if (!read_bool(doc, "stream", o.stream, error) || !read_bool(doc, "ignore_eos", o.ignore_eos, error)) return error;
  return {};
}

// vLLM's check that the prompt and the completion fit the context.
std::string check_context(int prompt_tokens, int max_tokens, long long max_model_len) {
  if (static_cast<long long>(prompt_tokens) + max_tokens <= max_model_len) return {};
  return strprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is "
                   "%lld tokens and your request has %d input tokens (%d > %lld - %d).",
                   max_tokens, max_model_len, prompt_tokens, max_tokens, max_model_len, prompt_tokens);
}

}  // namespace

Engine::Engine(Config cfg)
    : cfg_(std::move(cfg)),
      // Loading a block from the CPU tier is a copy, not a forward pass: a
      // tenth of the prefill's cost per token unless the switch says.
      latency_{cfg_.switches.token_delay_s, cfg_.switches.token_delay_per_seq_s, cfg_.switches.prefill_s_per_1k,
               cfg_.switches.kv_load_s_per_1k.value_or(cfg_.switches.prefill_s_per_1k / 10)} {
  for (int r : cfg_.layout.served_ranks) {
    auto it = caches_.emplace(r, KvCache(cfg_.kv)).first;
    stats_.emplace(r, RankStats{}).first->second.kv = it->second.snapshot();
  }
  log_kv_cache_size(cfg_.kv.gpu_tokens(), cfg_.max_model_len);
  if (cfg_.kv.tier != TierKind::kNone) {
    logf("KV offload tier (%s): %lld CPU blocks of %lld bytes (%s tokens) per rank", cfg_.kv.connector.c_str(),
         cfg_.kv.cpu_blocks, cfg_.kv.bytes_per_block, with_thousands(cfg_.kv.cpu_blocks * cfg_.kv.block_size).c_str());
  }
}

void Engine::hang() { hold_.store("hang (FAKE_VLLM_HANG_AFTER_S)"); }

void Engine::stall() {
  const Faults& faults = cfg_.switches.faults;
  std::vector<int> ranks = stalled_ranks(faults.stall_rank, served());
  if (ranks.empty()) {
    logf("fault FAKE_VLLM_STALL_AFTER_S: data-parallel rank %d is not served here; nothing stalls here",
         faults.stall_rank.value_or(-1));
    return;
  }
  // uvicorn serves /health, /metrics and every stream from one event loop:
  // while it is wedged, no rank's tokens go out and no request is answered.
  if (faults.stall_metrics) ranks = served();
  std::string names;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    for (int r : ranks) {
      stalled_.insert(r);
      names += (names.empty() ? "" : ",") + std::to_string(r);
    }
  }
  if (faults.stall_metrics) {
    hold_.store("wedged API server (FAKE_VLLM_STALL_METRICS)");
    logf("fault FAKE_VLLM_STALL_AFTER_S with FAKE_VLLM_STALL_METRICS: the API server's event loop is wedged: no "
         "tokens on data-parallel ranks [%s], every request (/health and /metrics too) is held; the process and "
         "its EngineCores stay alive",
         names.c_str());
    return;
  }
  logf("fault FAKE_VLLM_STALL_AFTER_S: token generation stops on data-parallel ranks [%s] (an engine stuck in a "
       "collective): their requests stay running without tokens; /health and /metrics keep answering",
       names.c_str());
}

void Engine::install(http::Server& svr) {
  svr.set_pre_routing_handler([this](const http::Request& req) {
    if (const char* why = hold_.load()) {
      logf("%s: holding %s %s from %s:%d forever", why, req.method.c_str(), req.path.c_str(),
           req.remote_addr.c_str(), req.remote_port);
      hold_forever();
    }
  });
  svr.set_logger([](const http::Request& req, const http::Response& res) {
    std::string rank = res.get_header_value("X-Served-By-Rank");
    logf("%s:%d - \"%s %s HTTP/1.1\" %d%s%s", req.remote_addr.c_str(), req.remote_port, req.method.c_str(),
         req.path.c_str(), res.status, rank.empty() ? "" : " rank=", rank.c_str());
  });
  svr.set_error_handler([](const http::Request&, http::Response& res) {
    if (!res.body.empty()) return;
    res.set_content(res.status == 404 ? R"({"detail":"Not Found"})" : R"({"detail":"Error"})", "application/json");
  });
  svr.Get("/health", [](const http::Request&, http::Response& res) { res.status = 200; });
  svr.Get("/ping", [](const http::Request&, http::Response& res) { res.status = 200; });
  svr.Get("/version", [](const http::Request&, http::Response& res) {
    res.set_content(std::string(R"({"version":")") + kVersion + "\"}", "application/json");
  });
  svr.Get("/v1/models", [this](const http::Request&, http::Response& res) {
    res.set_content(models_json(cfg_.served_names, cfg_.model_path, cfg_.max_model_len), "application/json");
  });
  svr.Get("/metrics", [this](const http::Request&, http::Response& res) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    res.set_content(render_metrics(stats_, cfg_.served_names.front(), served().front(), cfg_.max_model_len, cfg_.kv),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  svr.Post("/v1/completions", [this](const http::Request& req, http::Response& res) { completion(req, res, false); });
  svr.Post("/v1/chat/completions",
           [this](const http::Request& req, http::Response& res) { completion(req, res, true); });
}

void Engine::json_error(http::Response& res, int status, const std::string& message, const char* type) {
  res.status = status;
  res.set_content(error_json(status, message, type), "application/json");
}

// The data-parallel rank that serves a request: the router's
// X-data-parallel-rank header, else this process's --data-parallel-rank,
// else its first rank (0 for a plain `vllm serve`). The head of a
// multi-node engine answers for the ranks of its other nodes too (the fake
// executes nothing remotely), and says which.
bool Engine::resolve_rank(const http::Request& req, int& rank, std::string& error) const {
  const std::vector<int>& ranks = served();
  if (!req.has_header("X-data-parallel-rank")) {
    rank = ranks.front();
    return true;
  }
  std::string v = req.get_header_value("X-data-parallel-rank");
  auto r = parse_int(v, 0, 1023);
  if (!r) {
    error = "X-data-parallel-rank: '" + v + "' is not a data-parallel rank";
    return false;
  }
  if (std::find(ranks.begin(), ranks.end(), *r) == ranks.end()) {
    error = strprintf("data_parallel_rank %lld is out of range [%d, %d]", *r, ranks.front(), ranks.back());
    return false;
  }
  rank = static_cast<int>(*r);
  return true;
}

// Parses and checks the body into `c` (model, generation, id) and `stream`;
// on a bad request answers 400 or 404 and returns false.
bool Engine::read_request(const http::Request& req, http::Response& res, Call& c, bool& stream,
                          std::vector<std::uint64_t>& token_hashes) {
  rapidjson::Document doc;
  doc.Parse(req.body.c_str(), req.body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    json_error(res, 400, "the request body must be a JSON object", "BadRequestError");
    return false;
  }
  c.model = cfg_.served_names.front();
  if (doc.HasMember("model") && !doc["model"].IsNull()) {
    if (!doc["model"].IsString()) {
      json_error(res, 400, "'model' must be a string", "BadRequestError");
      return false;
    }
    std::string m = doc["model"].GetString();
    if (std::find(cfg_.served_names.begin(), cfg_.served_names.end(), m) == cfg_.served_names.end()) {
      json_error(res, 404, "The model `" + m + "` does not exist.", "NotFoundError");
      return false;
    }
    c.model = m;
  }
  Options o;
  std::string prompt;
  int prompt_tokens = 0;
  std::string error = read_options(doc, o);
  if (error.empty()) error = read_prompt(doc, c.chat, prompt, prompt_tokens, &token_hashes);
  if (error.empty()) error = check_context(prompt_tokens, o.max_tokens, cfg_.max_model_len);
  if (!error.empty()) {
    json_error(res, 400, error, "BadRequestError");
    return false;
  }
  stream = o.stream;
  c.gen = generate(prompt, prompt_tokens, o.max_tokens, o.ignore_eos);
  c.id = strprintf("%s-%d-%llu", c.chat ? "chatcmpl" : "cmpl", static_cast<int>(::getpid()),
                   static_cast<unsigned long long>(next_id_.fetch_add(1)));
  c.created = static_cast<std::int64_t>(std::time(nullptr));
  return true;
}

void Engine::completion(const http::Request& req, http::Response& res, bool chat) {
  Call c;
  c.chat = chat;
  c.t0 = now_s();
  std::string error;
  if (!resolve_rank(req, c.rank, error)) {
    json_error(res, 400, error, "BadRequestError");
    return;
  }
  res.set_header("X-Served-By-Rank", std::to_string(c.rank));
  bool streamed = false;
  std::vector<std::uint64_t> token_hashes;
  if (!read_request(req, res, c, streamed, token_hashes)) return;
  admit(c, token_hashes);
  if (streamed) {
    stream(res, c);
    return;
  }
  pace(c);
  res.set_content(full_response(c), "application/json");
  finish_stats(c, now_s() - c.t0, true);
}

// The request starts running on its rank: its prompt is looked up in the
// rank's KV cache (hashed outside the lock: a prompt may be long) and its
// blocks held until finish_stats. On a stalled rank it only counts as
// running: the scheduler that would look it up is stuck, and its first
// token (generated) holds it forever.
void Engine::admit(Call& c, const std::vector<std::uint64_t>& token_hashes) {
  const std::vector<std::uint64_t> blocks = block_hashes(token_hashes, cfg_.kv.block_size);
  c.prompt_tokens_details = cfg_.kv.prompt_tokens_details;
  std::lock_guard<std::mutex> lock(stats_mutex_);
  if (stalled_.count(c.rank) != 0) {
    stats_[c.rank].running += 1;
    return;
  }
  KvCache& cache = caches_.at(c.rank);
  const KvAdmission a = cache.admit(blocks, c.gen.prompt_tokens, static_cast<int>(c.gen.tokens.size()));
  c.kv_id = a.id;
  c.gpu_hit_tokens = a.gpu_hit_tokens;
  c.cpu_hit_tokens = a.cpu_hit_tokens;
  RankStats& s = stats_[c.rank];
  s.running += 1;
  s.kv = cache.snapshot();
}

// The SSE answer, written as the tokens are "generated"; the stats count it
// as a success once [DONE] is sent, else (the client went away) as aborted.
void Engine::stream(http::Response& res, const Call& c) {
  auto state = std::make_shared<std::pair<Call, bool>>(c, false);  // call, finished
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, state](std::size_t, http::DataSink& sink) {
        double ttft = -1;
        if (!send_stream(state->first, sink, ttft)) return false;
        state->second = true;
        finish_stats(state->first, ttft < 0 ? now_s() - state->first.t0 : ttft, true);
        sink.done();
        return true;
      },
      [this, state](bool) {
        if (!state->second) finish_stats(state->first, 0, false);
      });
}

Engine::Load Engine::load(int rank) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  Load l;
  for (const auto& [r, s] : stats_) {
    l.process += s.running;
    if (r == rank) l.rank = s.running;
  }
  return l;
}

// A whole (not streamed) answer: sleeps until its last token is due,
// counting the tokens generated before each sleep.
void Engine::pace(const Call& c) {
  const int count = static_cast<int>(c.gen.tokens.size());
  int emitted = 0;
  if (!latency_.zero()) {
    TokenPacer pacer(latency_, c.t0, c.gen.prompt_tokens - c.gpu_hit_tokens - c.cpu_hit_tokens, c.cpu_hit_tokens);
    for (int i = 0; i < count; ++i) {
      const Load l = load(c.rank);
      const double due = pacer.next_due(l.rank);
      if (TokenPacer::must_wait(due, now_s(), i, count, TokenPacer::write_interval_s(l.process))) {
        generated(c, emitted, i);
        sleep_s(due - now_s());
      }
    }
  }
  generated(c, emitted, count);
}

// The call's tokens before index `upto` are generated: counted on its rank
// (count_generated), `emitted` of them already were. On a stalled rank
// nothing is counted and this never returns: the request stays running, its
// stream open, and it gets no more tokens (FAKE_VLLM_STALL_AFTER_S).
void Engine::generated(const Call& c, int& emitted, int upto) {
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    if (stalled_.count(c.rank) == 0) {
      count_generated(stats_[c.rank], PromptTokens{c.gen.prompt_tokens, c.gpu_hit_tokens, c.cpu_hit_tokens}, emitted,
                      upto - emitted);
      emitted = upto;
      return;
    }
  }
  logf("stall (FAKE_VLLM_STALL_AFTER_S): %s on data-parallel rank %d gets no more tokens after %d", c.id.c_str(),
       c.rank, emitted);
  hold_forever();
}

// Every frame of one stream: the role chunk, one per token (the last with
// the finish reason), the usage chunk and [DONE], each token when the
// latency model has it due (TokenPacer: frames due close together go out in
// one write). False once the client is gone. Sets ttft when the first token
// went out. Each write counts the tokens it carries as generated, so on a
// stalled rank no more chunk leaves (generated holds).
bool Engine::send_stream(const Call& call, http::DataSink& sink, double& ttft) {
  std::string pending;
  int queued = 0;   // tokens put in frames so far
  int emitted = 0;  // of them, counted as generated
  auto flush = [&] {
    generated(call, emitted, queued);
    const bool ok = pending.empty() || sink.write(pending.data(), pending.size());
    pending.clear();
    return ok;
  };
  std::string empty;
  pending = sse_chunk(call, "assistant", call.chat ? &empty : nullptr, nullptr, false);
  if (!flush()) return false;
  TokenPacer pacer(latency_, call.t0, call.gen.prompt_tokens - call.gpu_hit_tokens - call.cpu_hit_tokens,
                   call.cpu_hit_tokens);
  const int count = static_cast<int>(call.gen.tokens.size());
  for (int i = 0; i < count; ++i) {
    if (!latency_.zero()) {
      const Load l = load(call.rank);
      const double due = pacer.next_due(l.rank);
      if (TokenPacer::must_wait(due, now_s(), i, count, TokenPacer::write_interval_s(l.process))) {
        if (!flush()) return false;
        sleep_s(due - now_s());
      }
    }
    const bool last = i + 1 == count;
    pending += sse_chunk(call, nullptr, &call.gen.tokens[static_cast<std::size_t>(i)],
                         last ? call.gen.finish_reason.c_str() : nullptr, false);
    queued = i + 1;
    if (i == 0) {
      if (!flush()) return false;
      ttft = now_s() - call.t0;
    }
  }
  if (count == 0) pending += sse_chunk(call, nullptr, nullptr, call.gen.finish_reason.c_str(), false);
  pending += sse_chunk(call, nullptr, nullptr, nullptr, true);
  pending += "data: [DONE]\n\n";
  return flush();
}

void Engine::finish_stats(const Call& c, double ttft, bool ok) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  RankStats& s = stats_[c.rank];
  s.running -= 1;
  KvCache& cache = caches_.at(c.rank);
  cache.release(c.kv_id);
  s.kv = cache.snapshot();
  if (!ok) {
    ++s.aborted;
    return;
  }
  (c.gen.finish_reason == "stop" ? s.success_stop : s.success_length) += 1;
  s.e2e.observe(now_s() - c.t0);
  s.ttft.observe(ttft);
}

}  // namespace ixfake::vllm
