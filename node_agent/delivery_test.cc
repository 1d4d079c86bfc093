#include "node_agent/delivery.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/base/sha256.h"
#include "tests/support/http_test_server.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using namespace std::chrono_literals;
using ::ix::test::TempDir;
using ::ix::test::WaitUntil;

constexpr char kToken[] = "s3cret-token";

// The collector's side of the protocol, enough to deliver to: POST
// /v1/events (all or nothing; an event with "bad":true makes the batch a
// 400; more than `max_events` a 413) and PUT /v1/results/SWEEP/ENTRY/NAME
// (the body's sha256 must match X-Content-SHA256). `status` (when not 200)
// answers every request instead; a wrong token is a 401; `hang` holds
// requests until the server goes.
class FakeCollector {
 public:
  std::atomic<int> status{200};
  std::atomic<bool> hang{false};
  std::atomic<size_t> max_events{100000};
  std::atomic<int> requests{0};

  FakeCollector() {
    http_.server().Post("/v1/events",
                        [this](const httplib::Request& req, httplib::Response& res) { Events(req, res); });
    http_.server().Put(R"(/v1/results/([^/]+)/(\d+)/([^/]+))",
                       [this](const httplib::Request& req, httplib::Response& res) { Results(req, res); });
    http_.Start();
  }
  // Releases the hung requests; the server stops after (http_ goes first).
  ~FakeCollector() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  std::string Url() const { return http_.Url("/"); }

  std::vector<std::string> stored() {
    std::lock_guard<std::mutex> lock(mu_);
    return stored_;
  }
  std::vector<size_t> batch_sizes() {
    std::lock_guard<std::mutex> lock(mu_);
    return batch_sizes_;
  }
  std::vector<size_t> body_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return body_bytes_;
  }
  std::map<std::string, std::string> results() {
    std::lock_guard<std::mutex> lock(mu_);
    return results_;
  }
  std::vector<std::string> headers(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return headers_[name];
  }

 private:
  // Common checks; false when answered already.
  bool Admit(const httplib::Request& req, httplib::Response& res) {
    ++requests;
    std::unique_lock<std::mutex> lock(mu_);
    for (const char* h : {"Authorization", "Content-Type", "X-Content-SHA256"}) {
      headers_[h].push_back(req.get_header_value(h));
    }
    if (hang) cv_.wait_for(lock, 30s, [this] { return released_; });
    if (req.get_header_value("Authorization") != std::string("Bearer ") + kToken) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer");
      return false;
    }
    if (status != 200) {
      res.status = status;
      return false;
    }
    return true;
  }
  void Events(const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res)) return;
    rapidjson::Document d;
    d.Parse(req.body.c_str(), req.body.size());
    std::lock_guard<std::mutex> lock(mu_);
    if (d.HasParseError() || !d.IsArray()) {
      res.status = 400;
      return;
    }
    batch_sizes_.push_back(d.Size());
    body_bytes_.push_back(req.body.size());
    if (d.Size() > max_events) {
      res.status = 413;
      return;
    }
    for (const auto& e : d.GetArray()) {
      if (!e.IsObject() || !e.HasMember("id") || !e["id"].IsString() || e.HasMember("bad")) {
        res.status = 400;
        res.set_content(R"({"error":"event is not valid"})", "application/json");
        return;  // nothing of the batch is stored
      }
    }
    for (const auto& e : d.GetArray()) stored_.push_back(e["id"].GetString());
    res.set_content(R"({"stored":)" + std::to_string(d.Size()) + R"(,"duplicates":0})", "application/json");
  }
  void Results(const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res)) return;
    if (Sha256Hex(req.body) != req.get_header_value("X-Content-SHA256")) {
      res.status = 400;
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    results_[req.matches[1].str() + "/" + req.matches[2].str() + "/" + req.matches[3].str()] = req.body;
    res.status = 201;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<std::string> stored_;
  std::vector<size_t> batch_sizes_;
  std::vector<size_t> body_bytes_;
  std::map<std::string, std::string> results_;
  std::map<std::string, std::vector<std::string>> headers_;
  testing_http::ServerThread http_{"127.0.0.1"};  // last: it stops before the routes' members go
};

std::string Event(int i, const std::string& more = "") {
  return R"({"id":"1.0:)" + std::to_string(i) + R"(","event":"ready","step":"1.0","time":1)" + more + "}";
}
std::vector<std::string> Ids(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("1.0:" + std::to_string(i));
  return out;
}

// A spool, a collector and fast options.
struct Fixture {
  TempDir tmp{"ix-delivery"};
  std::unique_ptr<Spool> spool;
  FakeCollector collector;
  std::mutex log_mu;
  std::vector<std::string> log;
  DeliveryOptions options;

  Fixture() {
    Result<std::unique_ptr<Spool>> s = Spool::Open(tmp.path() + "/spool");
    EXPECT_TRUE(s) << s.error().message;
    if (s) spool = std::move(s).value();
    options.collector = collector.Url();
    options.token = kToken;
    options.backoff_initial = 1ms;
    options.backoff_max = 5ms;
    options.idle_check = 20ms;
    options.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu);
      log.push_back(line);
    };
  }
  void Append(int from, int to) {
    std::vector<std::string> events;
    for (int i = from; i < to; ++i) events.push_back(Event(i));
    ASSERT_TRUE(spool->Append(events));
  }
  // A delivery of this spool with these options, started; null (and a
  // failure) when it does not start.
  std::unique_ptr<Delivery> Started() {
    auto d = std::make_unique<Delivery>(*spool, options);
    if (d->Start()) return d;
    ADD_FAILURE() << "the delivery did not start";
    return nullptr;
  }
  int LogLinesWith(const std::string& s) {
    std::lock_guard<std::mutex> lock(log_mu);
    return static_cast<int>(std::count_if(log.begin(), log.end(), [&](const std::string& l) { return l.find(s) != std::string::npos; }));
  }
};

TEST(Delivery, PostsTheSpoolAsJsonArraysWithTheToken) {
  Fixture f;
  f.Append(1, 11);
  f.options.max_batch_records = 4;
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return f.collector.stored().size() >= 10; }, 20s));
  EXPECT_EQ(f.collector.stored(), Ids(1, 11));  // in order
  EXPECT_EQ(f.collector.batch_sizes(), (std::vector<size_t>{4, 4, 2}));
  for (const std::string& h : f.collector.headers("Authorization")) EXPECT_EQ(h, "Bearer s3cret-token");
  for (const std::string& h : f.collector.headers("Content-Type")) EXPECT_EQ(h, "application/json");
  ASSERT_TRUE(WaitUntil([&] { return d->Counters().spool.pending_records == 0; }, 20s));
  const DeliveryCounters c = d->Counters();
  EXPECT_EQ(c.events_delivered, 10u);
  EXPECT_EQ(c.retries, 0u);
  EXPECT_GT(c.last_success_time, 0);
  EXPECT_TRUE(d->Stop(10s));
}

TEST(Delivery, ABatchStaysWithinTheByteLimit) {
  Fixture f;
  f.Append(1, 21);  // 51 or 52 bytes each
  f.options.max_batch_bytes = 300;
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return f.collector.stored().size() >= 20; }, 20s));
  for (size_t n : f.collector.body_bytes()) EXPECT_LE(n, 300u);
  EXPECT_EQ(f.collector.batch_sizes().front(), 5u);  // 5 * 51 + 4 commas + 2 brackets = 261; a sixth is too many
  EXPECT_EQ(f.collector.stored(), Ids(1, 21));
}

TEST(Delivery, RetriesAfter503AndAcknowledgesNothingBeforeA200) {
  Fixture f;
  f.collector.status = 503;
  f.Append(1, 6);
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return f.collector.requests >= 3; }, 20s));
  DeliveryCounters c = d->Counters();
  EXPECT_EQ(c.spool.pending_records, 5u);  // at least once: still all there
  EXPECT_EQ(c.events_delivered, 0u);
  EXPECT_GE(c.retries, 2u);
  EXPECT_NE(c.last_error.find("HTTP 503"), std::string::npos) << c.last_error;
  f.collector.status = 200;
  ASSERT_TRUE(WaitUntil([&] { return d->Counters().spool.pending_records == 0; }, 20s));
  EXPECT_EQ(f.collector.stored(), Ids(1, 6));
  EXPECT_EQ(d->Counters().events_delivered, 5u);
}

TEST(Delivery, A401IsLoggedOnceAndRetriedUntilTheTokenIsTaken) {
  Fixture f;
  f.options.token = "wrong";
  f.options.backoff_max = 2ms;
  f.Append(1, 3);
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return f.collector.requests >= 5; }, 20s));
  const DeliveryCounters c = d->Counters();
  EXPECT_TRUE(c.unauthorized);
  EXPECT_EQ(c.spool.pending_records, 2u);
  EXPECT_EQ(f.LogLinesWith("HTTP 401"), 1);
  EXPECT_TRUE(d->Stop(10s));
  EXPECT_TRUE(f.collector.stored().empty());
}

TEST(Delivery, ABadRecordIsFoundBySplittingAndSkipped) {
  Fixture f;
  std::vector<std::string> events;
  for (int i = 1; i <= 10; ++i) events.push_back(Event(i, i == 6 ? R"(,"bad":true)" : ""));
  ASSERT_TRUE(f.spool->Append(events));
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return d->Counters().spool.pending_records == 0; }, 20s));
  std::vector<std::string> want = Ids(1, 11);
  want.erase(want.begin() + 5);
  EXPECT_EQ(f.collector.stored(), want);  // the others, in order, once
  const DeliveryCounters c = d->Counters();
  EXPECT_EQ(c.events_skipped, 1u);
  EXPECT_EQ(c.events_delivered, 9u);
  EXPECT_EQ(f.LogLinesWith(R"("id":"1.0:6")"), 1);
  EXPECT_EQ(f.LogLinesWith("event is not valid"), 1);  // the collector's word is logged
}

TEST(Delivery, A413SplitsTheBatchAndLosesNothing) {
  Fixture f;
  f.collector.max_events = 3;
  f.Append(1, 11);
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return d->Counters().spool.pending_records == 0; }, 20s));
  EXPECT_EQ(f.collector.stored(), Ids(1, 11));
  EXPECT_EQ(d->Counters().events_skipped, 0u);
}

TEST(Delivery, NoCollectorListeningIsRetried) {
  Fixture f;
  testing_http::RawPort refused(false);
  f.options.collector = refused.Url("");
  f.Append(1, 3);
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return d->Counters().retries >= 3; }, 20s));
  const DeliveryCounters c = d->Counters();
  EXPECT_EQ(c.spool.pending_records, 2u);
  EXPECT_NE(c.last_error.find("POST http://127.0.0.1:"), std::string::npos) << c.last_error;
  EXPECT_EQ(c.last_success_time, 0);
}

TEST(Delivery, StopAbortsARequestInFlight) {
  Fixture f;
  f.collector.hang = true;  // answers in 30 s at the earliest
  f.Append(1, 3);
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return f.collector.requests >= 1; }, 20s));
  EXPECT_TRUE(d->Stop(10s));
  EXPECT_EQ(f.spool->Stats().pending_records, 2u);
  EXPECT_EQ(d->Counters().events_delivered, 0u);
}

TEST(Delivery, WakeEndsAnIdleWait) {
  Fixture f;
  f.options.idle_check = std::chrono::hours(1);
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d);
  std::this_thread::sleep_for(50ms);  // most likely idle by now (a test of Wake either way)
  f.Append(1, 3);
  d->Wake();
  ASSERT_TRUE(WaitUntil([&] { return f.collector.stored().size() == 2; }, 20s));
}

TEST(Delivery, StartRefusesWhatCannotWork) {
  Fixture f;
  f.options.collector = "ftp://collector/";
  EXPECT_FALSE(Delivery(*f.spool, f.options).Start());
  f.options.collector = f.collector.Url();
  f.options.token = "";
  EXPECT_FALSE(Delivery(*f.spool, f.options).Start());
}

TEST(Delivery, ResultsAreStreamedWithTheirSha256) {
  Fixture f;
  const std::string src = f.tmp.path() + "/metrics.csv";
  std::string content;
  for (int i = 0; i < 100000; ++i) content += std::to_string(i) + ",";
  std::ofstream(src) << content;
  UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  Result<SpoolResult> added = f.spool->AddResult("sw-1", 4, "gpu_metrics.csv", fd.get(), 64 << 20);
  ASSERT_TRUE(added) << added.error().message;
  f.Append(1, 3);
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return d->Counters().results_delivered == 1; }, 20s));
  const std::map<std::string, std::string> results = f.collector.results();
  ASSERT_EQ(results.count("sw-1/4/gpu_metrics.csv"), 1u);
  EXPECT_EQ(results.at("sw-1/4/gpu_metrics.csv"), content);
  EXPECT_TRUE(f.spool->PendingResults().empty());
  EXPECT_EQ(f.collector.stored(), Ids(1, 3));
  const std::vector<std::string> sums = f.collector.headers("X-Content-SHA256");
  EXPECT_NE(std::find(sums.begin(), sums.end(), Sha256Hex(content)), sums.end());
}

TEST(Delivery, AResultTheCollectorRefusesIsDropped) {
  Fixture f;
  const std::string src = f.tmp.path() + "/f";
  std::ofstream(src) << "original";
  UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  Result<SpoolResult> added = f.spool->AddResult("sw", 0, "f", fd.get(), 100);
  ASSERT_TRUE(added) << added.error().message;
  // The spool's copy no longer matches its sha256: the collector says 400.
  std::ofstream(f.tmp.path() + "/spool/results/" + std::to_string(added.value().id) + ".data") << "changed!";
  const std::unique_ptr<Delivery> d = f.Started();
  ASSERT_TRUE(d && WaitUntil([&] { return d->Counters().results_skipped == 1; }, 20s));
  EXPECT_TRUE(f.spool->PendingResults().empty());
  EXPECT_TRUE(f.collector.results().empty());
  EXPECT_EQ(f.LogLinesWith("collector refused result sw/0/f"), 1);
}

// --- the token file ---

TEST(ReadTokenFile, TakesAPrivateFileAndRefusesTheRest) {
  TempDir tmp("ix-token");
  const std::string path = tmp.path() + "/agent.token";
  auto write = [&](const std::string& text, mode_t mode) {
    ::unlink(path.c_str());
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
  };
  write("abc.DEF-123_~\n", 0600);
  Result<std::string> ok = ReadTokenFile(path);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok.value(), "abc.DEF-123_~");
  write("abc", 0400);
  EXPECT_TRUE(ReadTokenFile(path));

  struct Case {
    std::string text;
    mode_t mode;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{{"abc", 0640, "mode 0640"},
                                         {"abc", 0604, "mode 0604"},
                                         {"", 0600, "0 bytes"},
                                         {"\n \n", 0600, "empty"},
                                         {std::string(4097, 'a'), 0600, "4097 bytes"},
                                         {"two words", 0600, "printable ASCII"},
                                         {"line\r\ninjected: 1", 0600, "printable ASCII"}}) {
    write(c.text, c.mode);
    Result<std::string> r = ReadTokenFile(path);
    ASSERT_FALSE(r) << c.says;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(path), std::string::npos);
  }
  write("abc", 0600);
  const std::string link = tmp.path() + "/link";
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  EXPECT_FALSE(ReadTokenFile(link));
  EXPECT_FALSE(ReadTokenFile(tmp.path()));  // a directory
  EXPECT_FALSE(ReadTokenFile(tmp.path() + "/missing"));
}

// A sweep's token comes as a descriptor from its job: owned by the job's
// user, private; a pipe (which could block) is refused.
TEST(ReadTokenFd, TakesTheJobUsersPrivateFile) {
  TempDir tmp("ix-token-fd");
  const std::string path = tmp.path() + "/collector.token";
  std::ofstream(path) << "t0ken\n";
  ::chmod(path.c_str(), 0600);
  ASSERT_EQ(::chown(path.c_str(), 4321, 4321), 0);  // the tests run as root
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  Result<std::string> ok = ReadTokenFd(fd.get(), "route token", 4321);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok.value(), "t0ken");
  Result<std::string> other = ReadTokenFd(fd.get(), "route token", 1234);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("owned by uid 4321"), std::string::npos) << other.error().message;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  UniqueFd r(p[0]), w(p[1]);
  Result<std::string> pipe = ReadTokenFd(r.get(), "route token", 0);
  ASSERT_FALSE(pipe);
  EXPECT_NE(pipe.error().message.find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace ix
