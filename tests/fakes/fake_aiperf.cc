// aiperf (fake): stands in for the SemiAnalysis fork of AIPerf that
// InferenceX's agentic benchmark runs as `aiperf profile --scenario
// inferencex-agentx-mvp ...`. Replays the synthetic AgentX trace set the
// repository ships (data/agentx-synthetic.jsonl, or $FAKE_AIPERF_TRACES) with
// --concurrency trajectory lanes against an OpenAI chat endpoint: a warmup of
// one-token requests, then --benchmark-duration seconds of profiling, while
// it scrapes the Prometheus endpoints; then writes the artifacts InferenceX
// reads. Exits 1 when the failed-request threshold stopped it early.
// The command line is aiperf_args.h, the traces aiperf_trace.h, the records
// and profile artifacts aiperf_export.h, the server metrics
// aiperf_server_metrics.h; this file runs the lanes. Documentation:
// tests/fakes/README.md, "aiperf".
#include <httplib.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "aiperf_args.h"
#include "aiperf_export.h"
#include "aiperf_server_metrics.h"
#include "aiperf_trace.h"
#include "fake_common.h"
#include "json_writer.h"

#ifndef IX_FAKE_AIPERF_TRACES
#define IX_FAKE_AIPERF_TRACES "agentx-synthetic.jsonl"
#endif

namespace {

using namespace ixfake::aiperf;
using ixfake::key_str;
using ixfake::key_strings;
using ixfake::key_strs;
using ixfake::strprintf;
using Clock = std::chrono::steady_clock;

std::int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string uuid_from(std::uint64_t a, std::uint64_t b) {
  a = (a & ~0xF000ULL) | 0x4000ULL;                        // version 4
  b = (b & ~(0xC000ULL << 48)) | (0x8000ULL << 48);      // RFC 4122 variant
  return strprintf("%08llx-%04llx-%04llx-%04llx-%012llx", static_cast<unsigned long long>(a >> 32),
                   static_cast<unsigned long long>((a >> 16) & 0xFFFF), static_cast<unsigned long long>(a & 0xFFFF),
                   static_cast<unsigned long long>(b >> 48), static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
}

std::string random_uuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return uuid_from(rng(), rng());
}

std::unique_ptr<httplib::Client> make_client(const ixfake::HttpUrl& url, time_t read_timeout_s) {
  auto cli = std::make_unique<httplib::Client>(url.host, url.port);
  cli->set_connection_timeout(10, 0);
  cli->set_read_timeout(read_timeout_s, 0);
  cli->set_write_timeout(read_timeout_s, 0);
  cli->set_keep_alive(true);
  cli->set_tcp_nodelay(true);
  return cli;
}

// "key:value" of --extra-inputs into the body: a value that parses as JSON
// (a number, true, an object) goes in as such, anything else as a string.
void write_extra_input(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::string& item) {
  const std::size_t colon = item.find(':');
  if (colon == std::string::npos || colon == 0) return;
  const std::string key = item.substr(0, colon);
  const std::string value = item.substr(colon + 1);
  rapidjson::Document d;
  d.Parse(value.c_str());
  w.Key(key.c_str());
  if (!d.HasParseError()) {
    w.RawValue(value.c_str(), value.size(), d.GetType());
  } else {
    w.String(value.c_str());
  }
}

// The state the lanes, the scraper and main() share.
class Run {
 public:
  Run(const Config& cfg, std::vector<Trace> traces) : cfg_(cfg), traces_(std::move(traces)) {}

  void lane(int lane);
  bool wait_warmup(double grace_s);
  void start_profiling(double duration_s);
  // Sleeps until `until` unless stopped first; false once stopped.
  bool sleep_until(Clock::time_point until);
  void stop(const char* why, bool cancelled);
  bool stopped() const { return stop_.load(); }
  bool cancelled() const { return cancelled_.load(); }
  std::vector<RequestRecord> take_records();
  std::pair<long, long> profiling_counts() {
    std::lock_guard<std::mutex> lock(m_);
    return {profiled_, failed_};
  }

 private:
  // One trajectory instance a lane replays: its trace, the next step
  // (< steps.size() while it runs), its cache-bust salt, the blocks it sent
  // and a correlation id per conversation of it.
  struct Trajectory {
    const Trace* trace = nullptr;
    std::size_t next = 0;
    std::uint64_t salt = 0;
    int number = 0;
    PrefixTracker tracker;
    std::map<std::string, std::string> correlation;  // conversation suffix -> id
  };
  void begin(Trajectory& t, LanePlanner& planner, int lane, int number, bool first);
  RequestRecord send(httplib::Client& cli, int lane, Trajectory& t, bool warmup);
  void record(RequestRecord rec);

  const Config& cfg_;
  std::vector<Trace> traces_;
  std::mutex m_;
  std::condition_variable cv_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cancelled_{false};
  int warmed_up_ = 0;
  bool profiling_ = false;
  Clock::time_point deadline_{};
  long profiled_ = 0;
  long failed_ = 0;
  std::vector<RequestRecord> records_;
};

void Run::begin(Trajectory& t, LanePlanner& planner, int lane, int number, bool first) {
  t = Trajectory{};
  t.trace = &traces_[planner.next_trace(traces_.size())];
  t.next = first ? static_cast<std::size_t>(planner.start_step(static_cast<int>(t.trace->steps.size()))) : 0;
  t.number = number;
  t.salt = ixfake::hash64(strprintf("%llu:%d:%d", cfg_.random_seed, lane, number));
}

RequestRecord Run::send(httplib::Client& cli, int lane, Trajectory& t, bool warmup) {
  const Step& step = t.trace->steps[t.next++];
  RequestRecord rec;
  rec.session_num = lane;
  rec.warmup = warmup;
  rec.conversation_id = t.trace->id + step.conversation_suffix;
  rec.turn_index = step.turn_index;
  rec.input_len = step.input_len;
  auto [it, fresh] = t.correlation.emplace(step.conversation_suffix, "");
  if (fresh) {
    const std::string key = strprintf("%llu:%d:%d:%s", cfg_.random_seed, lane, t.number, rec.conversation_id.c_str());
    it->second = uuid_from(ixfake::hash64(key), ixfake::hash64(key + "#"));
  }
  rec.x_correlation_id = it->second;
  rec.x_request_id = random_uuid();
  std::tie(rec.prefix_hit_blocks, rec.prefix_blocks) = t.tracker.observe(step.hash_ids);
  const int max_tokens = warmup ? 1 : step.output_len;

  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  const std::string content = prompt_content(*t.trace, step, t.salt);
  w.StartObject();
  key_str(w, "model", cfg_.model);
  w.Key("messages");
  w.StartArray();
  w.StartObject();
  key_str(w, "role", "user");
  key_str(w, "content", content);
  w.EndObject();
  w.EndArray();
  w.Key("max_tokens");
  w.Int(max_tokens);
  w.Key("ignore_eos");
  w.Bool(true);
  w.Key("stream");
  w.Bool(true);
  w.Key("stream_options");
  w.StartObject();
  w.Key("include_usage");
  w.Bool(true);
  w.EndObject();
  for (const std::string& item : cfg_.extra_inputs) write_extra_input(w, item);
  w.EndObject();

  httplib::Request req;
  req.method = "POST";
  req.path = cfg_.url.base_path + cfg_.endpoint;
  req.headers.emplace("Content-Type", "application/json");
  req.headers.emplace("Accept", "text/event-stream");
  req.headers.emplace("X-Request-ID", rec.x_request_id);
  req.headers.emplace("X-Correlation-ID", rec.x_correlation_id);
  if (cfg_.session_header_from_correlation_id) req.headers.emplace("X-Session-ID", rec.x_correlation_id);
  req.body = sb.GetString();

  int status = 0;
  std::string body;  // a non-200 answer
  std::string stream_error;
  bool done = false;
  int chunks = 0;
  std::optional<int> prompt_tokens, completion_tokens;
  Clock::time_point first_token{}, last_token{};
  ixfake::SseParser sse;
  const Clock::time_point t0 = Clock::now();
  rec.start_ns = unix_ns();
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    rec.ack_ns = unix_ns();
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t len, std::uint64_t, std::uint64_t) {
    if (status != 200) {
      body.append(data, std::min<std::size_t>(len, 4096));
      return true;
    }
    for (const std::string& event : sse.feed(std::string_view(data, len))) {
      if (event == "[DONE]") {
        done = true;
        continue;
      }
      rapidjson::Document d;
      d.Parse(event.c_str());
      if (d.HasParseError() || !d.IsObject() || d.HasMember("error")) {
        stream_error = "bad stream event: " + event.substr(0, 200);
        continue;
      }
      if (d.HasMember("choices") && d["choices"].IsArray()) {
        for (const auto& ch : d["choices"].GetArray()) {
          if (ch.IsObject() && ch.HasMember("delta") && ch["delta"].IsObject() && ch["delta"].HasMember("content") &&
              ch["delta"]["content"].IsString() && ch["delta"]["content"].GetStringLength() > 0) {
            last_token = Clock::now();
            if (chunks++ == 0) first_token = last_token;
          }
        }
      }
      if (d.HasMember("usage") && d["usage"].IsObject()) {
        const auto& u = d["usage"];
        if (u.HasMember("prompt_tokens") && u["prompt_tokens"].IsInt()) prompt_tokens = u["prompt_tokens"].GetInt();
        if (u.HasMember("completion_tokens") && u["completion_tokens"].IsInt()) {
          completion_tokens = u["completion_tokens"].GetInt();
        }
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = cli.send(req, res, err);
  const Clock::time_point t1 = Clock::now();
  rec.end_ns = unix_ns();
  if (rec.ack_ns == 0) rec.ack_ns = rec.end_ns;
  if (sent && res.has_header("X-Served-By-Rank")) {
    if (auto r = ixfake::parse_int(res.get_header_value("X-Served-By-Rank"), 0, 1 << 20)) {
      rec.served_by_rank = static_cast<int>(*r);
    }
  }
  if (!sent) {
    rec.error = RequestError{std::nullopt, "ClientConnectionError", "request failed: " + httplib::to_string(err)};
  } else if (res.status != 200) {
    rec.error = RequestError{res.status, "HTTPStatusError", strprintf("HTTP %d: %s", res.status, body.c_str())};
  } else if (!stream_error.empty()) {
    rec.error = RequestError{std::nullopt, "StreamError", stream_error};
  } else if (!done || chunks == 0) {
    rec.error = RequestError{std::nullopt, "IncompleteResponse",
                             done ? "the stream carried no content" : "the stream ended without data: [DONE]"};
  }
  if (rec.error) return rec;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  rec.isl = cfg_.use_server_token_count && prompt_tokens ? *prompt_tokens : step.input_len;
  rec.osl = cfg_.use_server_token_count && completion_tokens ? *completion_tokens : chunks;
  rec.ttft_ms = ms(first_token - t0);
  rec.latency_ms = ms(t1 - t0);
  if (*rec.osl > 1) {
    rec.itl_ms = ms(last_token - first_token) / (*rec.osl - 1);
    rec.full_itl_ms = ms(t1 - first_token) / (*rec.osl - 1);
  }
  return rec;
}

void Run::record(RequestRecord rec) {
  std::lock_guard<std::mutex> lock(m_);
  if (!rec.warmup) {
    ++profiled_;
    if (rec.error) ++failed_;
    const long armed = std::max(cfg_.concurrency, 10);
    const double rate = static_cast<double>(failed_) / static_cast<double>(profiled_);
    if (profiled_ >= armed && rate > cfg_.failed_request_threshold && !stop_.load()) {
      ixfake::logf("ERROR: failed request rate %ld/%ld = %.3f%% exceeds --failed-request-threshold %.3f%%; stopping",
                   failed_, profiled_, 100 * rate, 100 * cfg_.failed_request_threshold);
      stop_.store(true);
      cancelled_.store(true);
      cv_.notify_all();
    }
  }
  if (rec.error) {
    ixfake::logf("request %s turn %d failed: %s: %s", rec.conversation_id.c_str(), rec.turn_index,
                 rec.error->type.c_str(), rec.error->message.substr(0, 200).c_str());
  }
  records_.push_back(std::move(rec));
}

bool Run::sleep_until(Clock::time_point until) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait_until(lock, until, [&] { return stop_.load(); });
  return !stop_.load();
}

void Run::stop(const char* why, bool cancelled) {
  std::lock_guard<std::mutex> lock(m_);
  if (!stop_.load()) ixfake::logf("stopping: %s", why);
  stop_.store(true);
  if (cancelled) cancelled_.store(true);
  cv_.notify_all();
}

void Run::lane(int lane) {
  auto cli = make_client(cfg_.url, 600);
  LanePlanner planner(cfg_.random_seed, lane, cfg_.start_min_ratio, cfg_.start_max_ratio);
  Trajectory t;
  int number = 0;
  begin(t, planner, lane, number++, true);
  for (int i = 0; i < cfg_.warmup_requests_per_lane && !stop_.load(); ++i) {
    if (t.next >= t.trace->steps.size()) begin(t, planner, lane, number++, false);
    record(send(*cli, lane, t, true));
  }
  Clock::time_point deadline;
  {
    std::unique_lock<std::mutex> lock(m_);
    ++warmed_up_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return profiling_ || stop_.load(); });
    deadline = deadline_;
  }
  while (!stop_.load() && Clock::now() < deadline) {
    if (t.next >= t.trace->steps.size()) begin(t, planner, lane, number++, false);
    const double gap = std::min(t.trace->steps[t.next].gap_s, cfg_.trace_idle_gap_cap_s);
    const auto wake = std::min(deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                            std::chrono::duration<double>(gap)));
    if (!sleep_until(wake) || Clock::now() >= deadline) break;
    record(send(*cli, lane, t, false));
  }
}

bool Run::wait_warmup(double grace_s) {
  std::unique_lock<std::mutex> lock(m_);
  return cv_.wait_for(lock, std::chrono::duration<double>(grace_s),
                      [&] { return warmed_up_ >= cfg_.concurrency || stop_.load(); });
}

void Run::start_profiling(double duration_s) {
  std::lock_guard<std::mutex> lock(m_);
  profiling_ = true;
  deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
  cv_.notify_all();
}

std::vector<RequestRecord> Run::take_records() {
  std::lock_guard<std::mutex> lock(m_);
  std::vector<RequestRecord> out = std::move(records_);
  std::stable_sort(out.begin(), out.end(), [](const RequestRecord& a, const RequestRecord& b) {
    return a.end_ns < b.end_ns;
  });
  return out;
}

void scrape_all(ServerMetrics& sm) {
  for (std::size_t i = 0; i < sm.urls().size(); ++i) {
    const std::string& url = sm.urls()[i];
    ixfake::HttpUrl u = ixfake::parse_http_url(url);
    std::optional<Scrape> scrape;
    if (u.ok()) {
      httplib::Client cli(u.host, u.port);
      cli.set_connection_timeout(5, 0);
      cli.set_read_timeout(10, 0);
      auto res = cli.Get(u.base_path.empty() ? "/" : u.base_path);
      if (res && res->status == 200) scrape = parse_prometheus(res->body);
    }
    sm.add(i, unix_ns(), std::move(scrape));
  }
}

std::string input_config(const Config& cfg, int argc, char** argv) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  std::string cli;
  for (int i = 0; i < argc; ++i) cli += (i > 0 ? " " : "") + std::string(argv[i]);
  w.StartObject();
  key_strs(w, {{"cli_command", cli}, {"scenario", cfg.scenario}, {"url", cfg.url_text}, {"endpoint", cfg.endpoint},
               {"model", cfg.model}});
  w.Key("concurrency");
  w.Int(cfg.concurrency);
  w.Key("benchmark_duration");
  w.Double(cfg.duration_s);
  w.Key("random_seed");
  w.Uint64(cfg.random_seed);
  key_str(w, "public_dataset", cfg.loader);
  key_strings(w, "server_metrics", cfg.metrics_urls);
  w.EndObject();
  return sb.GetString();
}

int write_artifacts(const Config& cfg, const std::vector<RequestRecord>& records, const RunInfo& info,
                    const ServerMetrics& sm) {
  std::string jsonl;
  for (const RequestRecord& r : records) jsonl += record_json(r) + "\n";
  const std::string dir = cfg.output_dir + "/";
  for (const auto& [name, content] :
       std::vector<std::pair<std::string, std::string>>{
           {"profile_export.jsonl", jsonl},
           {"profile_export_aiperf.json", aggregate_json(records, info)},
           {"server_metrics_export.json", sm.json(info.aiperf_version, info.benchmark_id, info.input_config_json)},
           {"server_metrics_export.csv", sm.csv()}}) {
    if (std::string err = ixfake::write_file_atomic(dir + name, content); !err.empty()) {
      std::fprintf(stderr, "aiperf: cannot write %s: %s\n", (dir + name).c_str(), err.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ixfake::start_program("aiperf");
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--version" || args[0] == "-V")) {
    std::printf("aiperf 0.12.0+fake\n");
    return 0;
  }
  const char* env = std::getenv("AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID");
  const bool session_env = env != nullptr && (std::string(env) == "1" || std::string(env) == "true");
  std::string error;
  auto parsed = parse_profile(args, session_env, error);
  if (!parsed) {
    std::fprintf(stderr, "aiperf: error: %s\n", error.c_str());
    return 2;
  }
  const Config& cfg = *parsed;
  const char* path_env = std::getenv("FAKE_AIPERF_TRACES");
  const std::string path = path_env != nullptr && *path_env != '\0' ? path_env : IX_FAKE_AIPERF_TRACES;
  auto loaded = load_traces(path, error);
  if (!loaded) {
    std::fprintf(stderr, "aiperf: cannot load the traces: %s\n", error.c_str());
    return 1;
  }
  std::vector<Trace> traces;
  for (Trace& t : *loaded) {
    if (cfg.max_context_length && t.peak_input() > *cfg.max_context_length) continue;
    if (static_cast<int>(traces.size()) < cfg.num_dataset_entries) traces.push_back(std::move(t));
  }
  if (traces.empty()) {
    std::fprintf(stderr, "aiperf: no trace of %s fits --max-context-length\n", path.c_str());
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(cfg.output_dir, ec);
  if (ec) {
    std::fprintf(stderr, "aiperf: cannot create %s: %s\n", cfg.output_dir.c_str(), ec.message().c_str());
    return 1;
  }
  ixfake::logf("scenario %s: %s (%s, %zu traces from %s), %d lanes against %s%s, %g s profiling after %d warmup "
               "requests per lane%s",
               cfg.scenario.c_str(), cfg.loader.c_str(), cfg.hf_dataset.c_str(), traces.size(), path.c_str(),
               cfg.concurrency, cfg.url_text.c_str(), cfg.endpoint.c_str(), cfg.duration_s,
               cfg.warmup_requests_per_lane, cfg.unsafe_override ? " (--unsafe-override: submission invalid)" : "");

  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  const int trace_count = static_cast<int>(traces.size());
  Run run(cfg, std::move(traces));
  std::thread([&run, sigs] {
    int sig = 0;
    if (sigwait(&sigs, &sig) == 0) run.stop(sig == SIGINT ? "SIGINT" : "SIGTERM", true);
  }).detach();

  std::vector<std::thread> lanes;
  for (int i = 0; i < cfg.concurrency; ++i) lanes.emplace_back([&run, i] { run.lane(i); });
  if (!run.wait_warmup(cfg.warmup_grace_period_s)) {
    ixfake::logf("warmup did not drain within --warmup-grace-period %g s; profiling anyway", cfg.warmup_grace_period_s);
  }
  ServerMetrics sm(cfg.metrics_urls);
  scrape_all(sm);
  RunInfo info;
  info.benchmark_id = random_uuid();
  info.loader = cfg.loader;
  info.hf_dataset = cfg.hf_dataset;
  info.input_config_json = input_config(cfg, argc, argv);
  const std::int64_t start_ns = unix_ns();
  const auto t0 = Clock::now();
  ixfake::logf("warmup done; profiling for %g s", cfg.duration_s);
  run.start_profiling(cfg.duration_s);
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.duration_s));
  const auto slice = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.slice_duration_s));
  const auto stats = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.stats_interval_s));
  auto next_slice = t0 + slice;
  auto next_stats = t0 + stats;
  while (!run.stopped() && Clock::now() < deadline) {
    if (!run.sleep_until(std::min({next_slice, next_stats, deadline}))) break;
    const auto now = Clock::now();
    if (now >= next_stats && now < deadline) {
      auto [n, failed] = run.profiling_counts();
      ixfake::logf("realtime metrics: %ld requests, %ld failed, %.0f s of %g s", n, failed,
                   std::chrono::duration<double>(now - t0).count(), cfg.duration_s);
      next_stats += stats;
    }
    if (now >= next_slice && now < deadline) {
      scrape_all(sm);
      while (next_slice <= now) next_slice += slice;
    }
  }
  for (auto& th : lanes) th.join();
  scrape_all(sm);
  const std::int64_t end_ns = unix_ns();
  info.start_time = naive_local_iso(start_ns);
  info.end_time = naive_local_iso(end_ns);
  info.duration_s = static_cast<double>(end_ns - start_ns) / 1e9;
  info.was_cancelled = run.cancelled();
  if (cfg.unsafe_override) info.invalid_reasons.push_back("unsafe_override");
  if (run.cancelled()) info.invalid_reasons.push_back("run_cancelled");
  info.num_dataset_entries = trace_count;
  std::vector<RequestRecord> records = run.take_records();
  int rc = write_artifacts(cfg, records, info, sm);
  auto [n, failed] = run.profiling_counts();
  ixfake::logf("%ld profiling requests (%ld failed), %zu records in all; artifacts in %s", n, failed, records.size(),
               cfg.output_dir.c_str());
  if (rc != 0) return rc;
  return run.cancelled() ? 1 : 0;
}
