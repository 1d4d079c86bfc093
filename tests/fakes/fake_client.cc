// ix-fake-client: stands in for AIPerf and InferenceX's benchmark_serving.py
// in tests. Runs S multi-turn chat sessions against $IX_ENDPOINT (else
// $AIPERF_SERVER_URL), each with its own X-Session-ID, and writes
// benchmark_serving.py's result file (its keys, order and rules) followed by
// the latency, time to first token and serving data-parallel rank of every
// turn. With $ISL/$OSL, every request's input and output length is drawn as
// benchmark_serving.py draws them. Exits 1 when any request failed, so a
// broken server fails the step.
// The command line is client_args.h, the drawn lengths random_lengths.h, the
// prompts chat_prompt.h, the result file client_result.h and
// serving_metrics.h; this file runs the sessions. Documentation:
// tests/fakes/README.md.
#include <httplib.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client_args.h"
#include "chat_prompt.h"
#include "client_result.h"
#include "fake_common.h"
#include "random_lengths.h"

namespace {

using ixfake::now_s;
using ixfake::strprintf;
using namespace ixfake::client;

std::unique_ptr<httplib::Client> make_client(const Config& cfg) {
  auto cli = std::make_unique<httplib::Client>(cfg.url.host, cfg.url.port);
  auto secs = static_cast<time_t>(cfg.timeout_s);
  auto usecs = static_cast<time_t>((cfg.timeout_s - static_cast<double>(secs)) * 1e6);
  cli->set_connection_timeout(std::min<time_t>(secs, 10), secs >= 10 ? 0 : usecs);
  cli->set_read_timeout(secs, usecs);
  cli->set_write_timeout(secs, usecs);
  cli->set_keep_alive(true);
  cli->set_tcp_nodelay(true);
  return cli;
}

// The body of one chat request: `ignore_eos` asks vLLM for exactly
// max_tokens tokens (benchmark_serving.py's --ignore-eos).
std::string request_body(const Config& cfg, const std::vector<Message>& messages, int max_tokens, bool ignore_eos) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("model");
  w.String(cfg.model.c_str());
  w.Key("messages");
  w.StartArray();
  for (const auto& m : messages) {
    w.StartObject();
    w.Key("role");
    w.String(m.role.c_str());
    w.Key("content");
    w.String(m.content.c_str());
    w.EndObject();
  }
  w.EndArray();
  w.Key("max_tokens");
  w.Int(max_tokens);
  if (ignore_eos) {
    w.Key("ignore_eos");
    w.Bool(true);
  }
  w.Key("stream");
  w.Bool(cfg.stream);
  if (cfg.stream) {
    w.Key("stream_options");
    w.StartObject();
    w.Key("include_usage");
    w.Bool(true);
    w.EndObject();
  }
  w.EndObject();
  return sb.GetString();
}

std::optional<int> rank_of(const rapidjson::Document& d) {
  if (d.IsObject() && d.HasMember("served_by_rank") && d["served_by_rank"].IsInt()) return d["served_by_rank"].GetInt();
  return std::nullopt;
}

void read_usage(const rapidjson::Document& d, Record& rec) {
  if (!d.HasMember("usage") || !d["usage"].IsObject()) return;
  const rapidjson::Value& u = d["usage"];
  if (u.HasMember("completion_tokens") && u["completion_tokens"].IsInt()) rec.completion_tokens = u["completion_tokens"].GetInt();
  if (u.HasMember("prompt_tokens") && u["prompt_tokens"].IsInt()) rec.prompt_tokens = u["prompt_tokens"].GetInt();
}

// The body of one answer as it arrives: kept whole when not streaming (or
// not 200), else split into SSE events whose deltas make the reply. Fills
// the record's rank, time to first token and completion tokens on the way.
struct ResponseReader {
  ResponseReader(const Config& c, Record& r) : cfg(c), rec(r), t0(now_s()) {}

  const Config& cfg;
  Record& rec;
  double t0;  // when the request started
  int status = 0;  // from the response handler, before the body
  std::string body;
  std::string reply;
  bool done_marker = false;
  std::string stream_error;
  ixfake::SseParser sse;

  bool feed(const char* data, std::size_t len) {
    if (!cfg.stream || status != 200) {
      body.append(data, len);
      return true;
    }
    for (const std::string& event : sse.feed(std::string_view(data, len))) on_event(event);
    return true;
  }

  void on_event(const std::string& event) {
    if (event == "[DONE]") {
      done_marker = true;
      return;
    }
    rapidjson::Document d;
    d.Parse(event.c_str());
    if (d.HasParseError() || !d.IsObject()) {
      stream_error = "a stream chunk is not JSON: " + event.substr(0, 200);
      return;
    }
    if (d.HasMember("error")) {
      stream_error = "error in stream: " + event.substr(0, 200);
      return;
    }
    if (auto r = rank_of(d)) rec.rank = *r;
    if (d.HasMember("choices") && d["choices"].IsArray()) {
      for (const auto& ch : d["choices"].GetArray()) {
        if (!ch.IsObject() || !ch.HasMember("delta") || !ch["delta"].IsObject()) continue;
        const auto& delta = ch["delta"];
        if (delta.HasMember("content") && delta["content"].IsString() && delta["content"].GetStringLength() > 0) {
          if (!rec.ttft_ms) rec.ttft_ms = (now_s() - t0) * 1000.0;
          reply += delta["content"].GetString();
        }
      }
    }
    read_usage(d, rec);
  }

  // After a 200: the reply, or "" with rec.error set.
  std::string finish() {
    if (cfg.stream) {
      if (!stream_error.empty()) {
        rec.error = stream_error;
      } else if (!done_marker) {
        rec.error = "the stream ended without data: [DONE]";
      }
      return reply;
    }
    rapidjson::Document d;
    d.Parse(body.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("choices") || !d["choices"].IsArray() ||
        d["choices"].Empty()) {
      rec.error = "the response is not a chat completion: " + body.substr(0, 200);
      return {};
    }
    if (auto r = rank_of(d)) rec.rank = *r;
    rec.ttft_ms = rec.latency_ms;
    const auto& choice = d["choices"][0];
    if (choice.HasMember("message") && choice["message"].IsObject() && choice["message"].HasMember("content") &&
        choice["message"]["content"].IsString()) {
      reply = choice["message"]["content"].GetString();
    }
    read_usage(d, rec);
    return reply;
  }
};

// One chat turn; fills `rec` and returns the assistant's reply.
std::string run_turn(httplib::Client& cli, const Config& cfg, const std::string& session,
                     const std::vector<Message>& messages, Record& rec) {
  httplib::Request req;
  req.method = "POST";
  req.path = cfg.url.base_path + "/v1/chat/completions";
  req.headers.emplace("X-Session-ID", session);
  req.headers.emplace("Content-Type", "application/json");
  if (cfg.stream) req.headers.emplace("Accept", "text/event-stream");
  req.body = request_body(cfg, messages, rec.max_tokens, cfg.lengths.has_value());

  ResponseReader reader(cfg, rec);
  req.content_receiver = [&](const char* data, std::size_t len, std::uint64_t, std::uint64_t) {
    return reader.feed(data, len);
  };
  req.response_handler = [&](const httplib::Response& r) {
    reader.status = r.status;
    return true;
  };
  httplib::Error err = httplib::Error::Success;
  httplib::Response full;
  bool ok = cli.send(req, full, err);
  rec.latency_ms = (now_s() - reader.t0) * 1000.0;
  if (!ok) {
    rec.status = reader.status > 0 ? reader.status : 0;
    rec.error = "request failed: " + httplib::to_string(err);
    return {};
  }
  rec.status = full.status;
  if (!rec.rank && full.has_header("X-Served-By-Rank")) {
    if (auto r = ixfake::parse_int(full.get_header_value("X-Served-By-Rank"), 0, 1 << 20)) {
      rec.rank = static_cast<int>(*r);
    }
  }
  if (full.status != 200) {
    rec.error = strprintf("HTTP %d: %s", full.status, reader.body.substr(0, 300).c_str());
    return {};
  }
  return reader.finish();
}

// GET /v1/models: the first model id, or an error message in `error`.
std::string discover_model(const Config& cfg, std::string& error) {
  auto cli = make_client(cfg);
  auto res = cli->Get(cfg.url.base_path + "/v1/models");
  if (!res) {
    error = "GET " + cfg.endpoint + "/v1/models failed: " + httplib::to_string(res.error());
    return {};
  }
  if (res->status != 200) {
    error = strprintf("GET %s/v1/models answered HTTP %d: %s", cfg.endpoint.c_str(), res->status,
                      res->body.substr(0, 200).c_str());
    return {};
  }
  rapidjson::Document d;
  d.Parse(res->body.c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("data") || !d["data"].IsArray() || d["data"].Empty() ||
      !d["data"][0].IsObject() || !d["data"][0].HasMember("id") || !d["data"][0]["id"].IsString()) {
    error = "GET " + cfg.endpoint + "/v1/models lists no model: " + res->body.substr(0, 200);
    return {};
  }
  return d["data"][0]["id"].GetString();
}

// ---------------------------------------------------------------- sessions

// What each request of a session asks: its turn's messages and max_tokens.
// Without drawn lengths, the whole conversation so far and a short question;
// with them, the turn fitted to the request's drawn input length
// (chat_prompt.h; the context slides, so a session's history stays within
// about ISL + OSL) and the drawn output length.
class TurnPlanner {
 public:
  explicit TurnPlanner(const Config& cfg) : cfg_(cfg) {
    if (cfg.lengths) drawn_ = draw_lengths(*cfg.lengths, cfg.requests());
  }

  // The messages of turn `turn` of session number `s`, given its history;
  // sets the record's input_len and max_tokens.
  std::vector<Message> plan(int s, int turn, const std::string& session, const std::vector<Message>& history,
                            Record& rec) const {
    std::vector<Message> messages;
    if (!cfg_.lengths) {
      messages = history;
      messages.push_back({"user", strprintf("Session %s, turn %d: tell me something short.", session.c_str(), turn)});
      rec.max_tokens = cfg_.max_tokens;
    } else {
      const auto i = static_cast<std::size_t>(s) * static_cast<std::size_t>(cfg_.turns) + static_cast<std::size_t>(turn);
      const std::uint64_t seed = (static_cast<std::uint64_t>(cfg_.lengths->seed) << 32) ^ i;
      messages = fit_turn(history, strprintf("Session %s, turn %d:", session.c_str(), turn), drawn_.input[i], seed);
      rec.max_tokens = std::max(drawn_.output[i], 1);  // int(1 * ratio) may draw 0; vLLM wants 1 at least
    }
    rec.input_len = chat_tokens(messages);
    return messages;
  }

 private:
  const Config& cfg_;
  DrawnLengths drawn_;
};

// The engine's usage against what was asked: with drawn lengths they must
// agree (the fake engine counts as the client does, ignore_eos is exact);
// a mismatch is logged, not fatal (a real engine tokenizes differently).
void check_usage(const Config& cfg, const Record& rec) {
  if (!cfg.lengths || !rec.error.empty()) return;
  if (rec.prompt_tokens != rec.input_len || rec.completion_tokens != rec.max_tokens) {
    ixfake::logf("session %s turn %d: the engine counted %d prompt and %d completion tokens; asked %d and %d",
                 rec.session.c_str(), rec.turn, rec.prompt_tokens, rec.completion_tokens, rec.input_len,
                 rec.max_tokens);
  }
}

// Runs every session, cfg.concurrency at a time; the records sorted by
// session number and turn. The first failure stops new turns unless
// --keep-going (a session never goes on past its failed turn).
std::vector<Record> run_sessions(const Config& cfg) {
  std::mutex m;
  std::vector<Record> records;
  std::atomic<int> next_session{0};
  std::atomic<bool> stop{false};
  const TurnPlanner planner(cfg);
  auto worker = [&] {
    auto cli = make_client(cfg);
    for (;;) {
      int s = next_session.fetch_add(1);
      if (s >= cfg.sessions || stop.load()) return;
      std::string session = cfg.session_prefix + std::to_string(s);
      std::vector<Message> history;
      for (int turn = 0; turn < cfg.turns && !stop.load(); ++turn) {
        Record rec;
        rec.session = session;
        rec.turn = turn;
        history = planner.plan(s, turn, session, history, rec);
        std::string reply = run_turn(*cli, cfg, session, history, rec);
        check_usage(cfg, rec);
        bool failed = !rec.error.empty();
        {
          std::lock_guard<std::mutex> lock(m);
          records.push_back(rec);
        }
        if (failed) {
          ixfake::logf("session %s turn %d failed: %s", session.c_str(), turn, rec.error.c_str());
          if (!cfg.keep_going) stop.store(true);
          break;  // the rest of this conversation has no history to build on
        }
        history.push_back({"assistant", reply});
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min(cfg.concurrency, cfg.sessions); ++t) threads.emplace_back(worker);
  for (auto& th : threads) th.join();
  std::sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return a.session.size() != b.session.size() ? a.session.size() < b.session.size()
           : a.session != b.session             ? a.session < b.session
                                                : a.turn < b.turn;
  });
  return records;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  ixfake::set_log_tag("ix-fake-client");
  Config cfg = parse_config(argc, argv);
  if (cfg.model.empty()) {
    std::string error;
    cfg.model = discover_model(cfg, error);
    if (cfg.model.empty()) {
      std::fprintf(stderr, "ix-fake-client: %s\n", error.c_str());
      return 1;
    }
  }
  ixfake::logf("endpoint %s, model '%s': %d sessions x %d turns, concurrency %d, %s%s", cfg.endpoint.c_str(),
               cfg.model.c_str(), cfg.sessions, cfg.turns, cfg.concurrency, cfg.stream ? "streaming" : "not streaming",
               cfg.aiperf_session_header_var ? "" : " (X-Session-ID is sent even without AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID=1)");
  if (cfg.lengths) {
    ixfake::logf("lengths drawn as benchmark_serving.py's random dataset: ISL %d, OSL %d, range ratio %g, seed %u "
                 "(ignore_eos; --max-tokens unused)",
                 cfg.lengths->isl, cfg.lengths->osl, cfg.lengths->range_ratio, cfg.lengths->seed);
  }

  // The benchmark window in unix time, as benchmark_serving.py records it
  // (power telemetry is matched against it); latencies use the steady clock.
  const auto unix_now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  const double t0 = unix_now();
  std::vector<Record> records = run_sessions(cfg);
  const double t1 = unix_now();
  const double wall = t1 - t0;
  Summary summary = summarize(records);
  if (std::string err = ixfake::write_file_atomic(cfg.out, result_json(cfg, records, summary, t0, t1)); !err.empty()) {
    std::fprintf(stderr, "ix-fake-client: cannot write the result: %s\n", err.c_str());
    return 1;
  }
  ixfake::logf("%zu requests, %d failed, %zu ranks used, %.3f s; result in %s", records.size(), summary.failed,
               summary.ranks.size(), wall, cfg.out.c_str());
  if (summary.failed > 0) {
    const Record& first = *summary.first_failure;
    std::fprintf(stderr, "ix-fake-client: %d of %zu requests failed against %s; first: session %s turn %d: %s\n",
                 summary.failed, records.size(), cfg.endpoint.c_str(), first.session.c_str(), first.turn,
                 first.error.c_str());
    return 1;
  }
  int expected = cfg.sessions * cfg.turns;
  if (static_cast<int>(records.size()) != expected) {
    std::fprintf(stderr, "ix-fake-client: only %zu of %d requests ran\n", records.size(), expected);
    return 1;
  }
  return 0;
}
