#include "vllm_api.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <thread>
#include <utility>

#include <unistd.h>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// `max_tokens`/`max_completion_tokens` (the last given wins; default 16) and
// `stream`; returns the 400 error message, empty on success.
std::string read_options(const rapidjson::Document& doc, int& max_tokens, bool& stream) {
  max_tokens = 16;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!doc.HasMember(key) || doc[key].IsNull()) continue;
    if (!doc[key].IsInt() || doc[key].GetInt() < 1) return std::string("'") + key + "' must be a positive integer";
    max_tokens = doc[key].GetInt();
  }
  stream = false;
  if (doc.HasMember("stream") && !doc["stream"].IsNull()) {
    if (!doc["stream"].IsBool()) return "'stream' must be a boolean";
    stream = doc["stream"].GetBool();
  }
  return {};
}

}  // namespace

Engine::Engine(Config cfg) : cfg_(std::move(cfg)) {
  for (int r : cfg_.local_ranks) stats_.emplace(r, RankStats{});
}

void Engine::install(http::Server& svr) {
  svr.set_pre_routing_handler([this](const http::Request& req) {
    if (hang.load()) {
      logf("hang (FAKE_VLLM_HANG_AFTER_S): holding %s %s from %s:%d forever", req.method.c_str(), req.path.c_str(),
           req.remote_addr.c_str(), req.remote_port);
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
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
    res.set_content(render_metrics(stats_, cfg_.served_names.front(), cfg_.local_ranks.front(), cfg_.max_model_len),
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
// else its first local rank (0 for a plain `vllm serve`).
bool Engine::resolve_rank(const http::Request& req, int& rank, std::string& error) const {
  if (!req.has_header("X-data-parallel-rank")) {
    rank = cfg_.local_ranks.front();
    return true;
  }
  std::string v = req.get_header_value("X-data-parallel-rank");
  auto r = parse_int(v, 0, 1023);
  if (!r) {
    error = "X-data-parallel-rank: '" + v + "' is not a data-parallel rank";
    return false;
  }
  if (std::find(cfg_.local_ranks.begin(), cfg_.local_ranks.end(), *r) == cfg_.local_ranks.end()) {
    error = strprintf("data_parallel_rank %lld is out of range [%d, %d]", *r, cfg_.local_ranks.front(),
                      cfg_.local_ranks.back());
    return false;
  }
  rank = static_cast<int>(*r);
  return true;
}

// Parses and checks the body into `c` (model, generation, id) and `stream`;
// on a bad request answers 400 or 404 and returns false.
bool Engine::read_request(const http::Request& req, http::Response& res, Call& c, bool& stream) {
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
  int max_tokens = 16;
  std::string prompt;
  int prompt_tokens = 0;
  std::string error = read_options(doc, max_tokens, stream);
  if (error.empty()) error = read_prompt(doc, c.chat, prompt, prompt_tokens);
  if (!error.empty()) {
    json_error(res, 400, error, "BadRequestError");
    return false;
  }
  c.gen = generate(prompt, prompt_tokens, max_tokens);
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
  if (!read_request(req, res, c, streamed)) return;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_[c.rank].running += 1;
  }
  if (streamed) {
    stream(res, c);
    return;
  }
  sleep_s(cfg_.switches.token_delay_s * static_cast<double>(c.gen.tokens.size()));
  res.set_content(full_response(c), "application/json");
  finish_stats(c, now_s() - c.t0, true);
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

// Every frame of one stream: the role chunk, one per token (the last with
// the finish reason), the usage chunk and [DONE]. False once the client is
// gone. Sets ttft when the first token went out.
bool Engine::send_stream(const Call& call, http::DataSink& sink, double& ttft) {
  auto send = [&](const std::string& frame) { return sink.write(frame.data(), frame.size()); };
  std::string empty;
  if (!send(sse_chunk(call, "assistant", call.chat ? &empty : nullptr, nullptr, false))) return false;
  for (std::size_t i = 0; i < call.gen.tokens.size(); ++i) {
    sleep_s(cfg_.switches.token_delay_s);
    bool last = i + 1 == call.gen.tokens.size();
    if (!send(sse_chunk(call, nullptr, &call.gen.tokens[i], last ? call.gen.finish_reason.c_str() : nullptr, false))) {
      return false;
    }
    if (ttft < 0) ttft = now_s() - call.t0;
  }
  if (call.gen.tokens.empty() && !send(sse_chunk(call, nullptr, nullptr, call.gen.finish_reason.c_str(), false))) {
    return false;
  }
  if (!send(sse_chunk(call, nullptr, nullptr, nullptr, true))) return false;
  return send("data: [DONE]\n\n");
}

void Engine::finish_stats(const Call& c, double ttft, bool ok) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  RankStats& s = stats_[c.rank];
  s.running -= 1;
  if (!ok) {
    ++s.aborted;
    return;
  }
  s.prompt_tokens += static_cast<unsigned long long>(c.gen.prompt_tokens);
  s.generation_tokens += c.gen.tokens.size();
  (c.gen.finish_reason == "stop" ? s.success_stop : s.success_length) += 1;
  s.e2e.observe(now_s() - c.t0);
  s.ttft.observe(ttft);
}

}  // namespace ixfake::vllm
