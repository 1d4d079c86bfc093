// ix-fake-client: stands in for AIPerf and InferenceX's benchmark_serving.py
// in tests. Two modes:
// - sessions (the default): S multi-turn chat sessions against $IX_ENDPOINT
//   (else $AIPERF_SERVER_URL), each with its own X-Session-ID; with
//   $ISL/$OSL, every request's input and output length is drawn as
//   benchmark_serving.py draws them. Exits 1 when any request failed, so a
//   broken server fails the step.
// - --benchmark-serving ARGS...: benchmark_serving.py's own command line, run
//   as it runs it (warmups, then N single-turn requests, C at a time, to its
//   completions or chat endpoint). Exits 1 when more than 5% failed, as it
//   does.
// Both write benchmark_serving.py's result file (its keys, order and rules)
// followed by the latency, time to first token and serving data-parallel
// rank of every request.
// The command lines are client_args.h and client_serving_args.h, the
// requests client_http.h, the drawn lengths random_lengths.h, the prompts
// chat_prompt.h, the result file client_result.h and serving_metrics.h; this
// file runs them. Documentation: tests/fakes/README.md.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chat_prompt.h"
#include "client_args.h"
#include "client_http.h"
#include "client_result.h"
#include "client_serving_args.h"
#include "fake_common.h"
#include "random_lengths.h"
#include "token_units.h"

namespace {

using ixfake::now_s;
using ixfake::strprintf;
using namespace ixfake::client;

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
// Without ignore_eos (benchmark_serving.py's mode without --ignore-eos) the
// engine may stop early, so only the prompt is compared.
void check_usage(const Config& cfg, const Record& rec) {
  if (!cfg.lengths || !rec.error.empty()) return;
  const bool exact_output = !cfg.serving || cfg.serving->ignore_eos;
  if (rec.prompt_tokens != rec.input_len || (exact_output && rec.completion_tokens != rec.max_tokens)) {
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
        BodyOptions body{cfg.model, rec.max_tokens, "max_tokens", cfg.lengths.has_value(), cfg.stream, false};
        const Request req{cfg.url.base_path + "/v1/chat/completions", chat_body(body, history), cfg.stream, session};
        std::string reply = send_request(*cli, req, rec);
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

// ------------------------------------------------- benchmark_serving.py's run

// Runs fn(client, i) for i in [0, count), at most `width` (and kMaxThreads)
// at a time, each worker thread with its own connection.
constexpr int kMaxThreads = 1024;
void run_pool(const Config& cfg, int count, int width, const std::function<void(httplib::Client&, int)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min({width, count, kMaxThreads}); ++t) {
    threads.emplace_back([&] {
      auto cli = make_client(cfg);
      for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) fn(*cli, i);
    });
  }
  for (auto& th : threads) th.join();
}

// benchmark_serving.py's requests with --dataset-name random: request i has
// the i-th drawn input and output lengths (at least 1 each). Its prompt is
// the input length in the fake engine's token unit: filler words for a
// completions backend, one user message fitted to it (chat_prompt.h) for
// openai-chat. The body is the real client's for that backend.
// Invariant: cfg.serving and cfg.lengths are set (Config's serving mode).
class ServingPlanner {
 public:
  explicit ServingPlanner(const Config& cfg)
      : cfg_(cfg), s_(*cfg.serving), drawn_(draw_lengths(*cfg.lengths, cfg.requests())) {}

  // Request i's HTTP request; sets the record's session, input_len and
  // max_tokens. No X-Session-ID: the real client sends none.
  Request plan(int i, Record& rec) const {
    rec.session = cfg_.session_prefix + std::to_string(i);
    rec.max_tokens = std::max(drawn_.output[static_cast<std::size_t>(i)], 1);
    const int input = std::max(drawn_.input[static_cast<std::size_t>(i)], 1);
    const std::uint64_t seed = (static_cast<std::uint64_t>(cfg_.lengths->seed) << 32) ^ static_cast<std::uint64_t>(i);
    const BodyOptions body{cfg_.model, rec.max_tokens, s_.chat ? "max_completion_tokens" : "max_tokens",
                           s_.ignore_eos, true, true};
    Request req{cfg_.url.base_path + s_.path, {}, true, {}};
    if (s_.chat) {
      std::vector<Message> messages = fit_turn({}, strprintf("Request %d:", i), input, seed);
      rec.input_len = chat_tokens(messages);
      req.body = chat_body(body, messages);
    } else {
      const std::string prompt = filler_words(input, seed);
      rec.input_len = ixfake::count_words(prompt);
      req.body = completion_body(body, prompt);
    }
    return req;
  }

 private:
  const Config& cfg_;
  const ServingOptions& s_;
  DrawnLengths drawn_;
};

// --num-warmups: request 0, W times, at most C at a time; not counted, and
// their failures only logged (the real client ignores them).
void warm_up(const Config& cfg, const ServingPlanner& planner) {
  const int warmups = cfg.serving->warmups;
  if (warmups == 0) return;
  std::atomic<int> failed{0};
  run_pool(cfg, warmups, cfg.concurrency, [&](httplib::Client& cli, int) {
    Record rec;
    send_request(cli, planner.plan(0, rec), rec);
    if (!rec.error.empty()) failed.fetch_add(1);
  });
  ixfake::logf("warmup: %d requests, %d failed", warmups, failed.load());
}

// --profile: POST BASE/start_profile or /stop_profile with request 0's body
// (the real client posts it through the backend's request function); the
// outcome is only logged, as the real client only prints a success.
void profile(const Config& cfg, const ServingPlanner& planner, const char* what) {
  auto cli = make_client(cfg);
  Record rec;
  Request req = planner.plan(0, rec);
  req.path = cfg.url.base_path + "/" + what;
  send_request(*cli, req, rec);
  ixfake::logf("%s: %s", what, rec.error.empty() ? "done" : rec.error.c_str());
}

// The counted requests, all of them whatever fails, cfg.concurrency at a
// time; the records in request order.
std::vector<Record> run_serving(const Config& cfg, const ServingPlanner& planner) {
  std::vector<Record> records(static_cast<std::size_t>(cfg.requests()));
  run_pool(cfg, cfg.requests(), cfg.concurrency, [&](httplib::Client& cli, int i) {
    Record& rec = records[static_cast<std::size_t>(i)];
    send_request(cli, planner.plan(i, rec), rec);
    check_usage(cfg, rec);
    if (!rec.error.empty()) ixfake::logf("request %s failed: %s", rec.session.c_str(), rec.error.c_str());
  });
  return records;
}

// The benchmark window in unix time, as benchmark_serving.py records it
// (power telemetry is matched against it); latencies use the steady clock.
double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The --benchmark-serving mode, as benchmark_serving.py's main(): exit 1
// when more than 5% of the requests failed (after saving the result).
int serving_main(const Config& cfg) {
  const ServingOptions& s = *cfg.serving;
  ixfake::logf("benchmark_serving.py: %s%s, model '%s', backend %s: %d prompts (ISL %d, OSL %d, range ratio %g, "
               "seed %u%s), max concurrency %d, %d warmups",
               cfg.endpoint.c_str(), s.path.c_str(), cfg.model.c_str(), s.backend.c_str(), cfg.requests(),
               cfg.lengths->isl, cfg.lengths->osl, cfg.lengths->range_ratio, cfg.lengths->seed,
               s.ignore_eos ? ", ignore_eos" : "", cfg.concurrency, s.warmups);
  const ServingPlanner planner(cfg);
  warm_up(cfg, planner);
  if (s.profile) profile(cfg, planner, "start_profile");
  const double t0 = unix_now();
  std::vector<Record> records = run_serving(cfg, planner);
  if (s.profile) profile(cfg, planner, "stop_profile");
  const double t1 = unix_now();
  const Summary summary = summarize(records);
  const int completed = cfg.requests() - summary.failed;
  std::string out = "not saved (no --save-result)";
  if (s.save_result) {
    out = cfg.out.empty() ? default_result_path(cfg, result_date(t1)) : cfg.out;
    if (std::string err = ixfake::write_file_atomic(out, result_json(cfg, records, summary, t0, t1)); !err.empty()) {
      std::fprintf(stderr, "ix-fake-client: cannot write the result: %s\n", err.c_str());
      return 1;
    }
  }
  ixfake::logf("%d of %d requests completed, %zu ranks used, %.3f s; result: %s", completed, cfg.requests(),
               summary.ranks.size(), t1 - t0, out.c_str());
  const double failure_rate = 1.0 - static_cast<double>(completed) / cfg.requests();
  if (failure_rate > 0.05) {
    std::fprintf(stderr, "FAIL: request failure rate %.1f%% exceeds 5%% threshold (%d/%d completed); first: %s: %s\n",
                 failure_rate * 100, completed, cfg.requests(), summary.first_failure->session.c_str(),
                 summary.first_failure->error.c_str());
    return 1;
  }
  return 0;
}

// ------------------------------------------------------------ sessions' main

// The sessions mode: exit 1 when any request failed.
int sessions_main(Config& cfg) {
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

}  // namespace

int main(int argc, char** argv) {
  ixfake::start_program("ix-fake-client");
  Config cfg = parse_config(argc, argv);
  return cfg.serving ? serving_main(cfg) : sessions_main(cfg);
}
