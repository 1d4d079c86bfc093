#include "node_agent/delivery.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include "core/base/text.h"

namespace ix {
namespace {

constexpr size_t kMaxTokenBytes = 4096;
constexpr size_t kMaxAnswerBody = 64 << 10;  // kept for the log; the rest is dropped

std::string Errno(int e) { return std::strerror(e); }

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// `s` cut to `n` bytes, one line, for the log.
std::string Clip(std::string_view s, size_t n = 200) {
  std::string out(s.substr(0, n));
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (s.size() > n) out += "...";
  return out;
}

}  // namespace

Result<std::string> ReadTokenFile(const std::string& path) {
  const std::string what = "token file " + path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return Error{what + ": " + Errno(errno) + (errno == ELOOP ? " (a symlink)" : "")};
  return ReadTokenFd(fd.get(), what, ::geteuid());
}

Result<std::string> ReadTokenFd(int fd, const std::string& what, uid_t owner) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return Error{what + ": " + Errno(errno)};
  if (!S_ISREG(st.st_mode)) return Error{what + ": not a regular file"};
  if (st.st_uid != 0 && st.st_uid != ::geteuid() && st.st_uid != owner) {
    return Error{what + ": owned by uid " + std::to_string(st.st_uid) + "; it must be owned by root or uid " +
                 std::to_string(owner)};
  }
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Error{what + ": mode " + mode + " lets group or others at it; it must be 0600 or stricter"};
  }
  if (st.st_size == 0 || static_cast<uint64_t>(st.st_size) > kMaxTokenBytes) {
    return Error{what + ": " + std::to_string(st.st_size) + " bytes; a token is 1 to " +
                 std::to_string(kMaxTokenBytes) + " bytes"};
  }
  std::string text(kMaxTokenBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{what + ": " + Errno(errno)};
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxTokenBytes) return Error{what + ": more than " + std::to_string(kMaxTokenBytes) + " bytes"};
  const std::string token(Trim(std::string_view(text.data(), got), " \t\r\n"));
  if (token.empty()) return Error{what + ": empty"};
  for (char c : token) {
    if (c <= 0x20 || c >= 0x7f) return Error{what + ": the token must be printable ASCII without blanks"};
  }
  return token;
}

// --- one HTTP request at a time over libcurl's multi interface, so that
// Stop can interrupt it (curl_multi_wakeup) ---

struct Delivery::Answer {
  long status = 0;       // 0: no HTTP answer
  std::string error;     // libcurl's words when status is 0
  std::string body;      // at most kMaxAnswerBody
  bool stopped = false;  // aborted by Stop
};

struct Delivery::Http {
  CURLM* multi = nullptr;
  CURL* easy = nullptr;
  std::atomic<bool>* stop = nullptr;

  // A PUT's body, streamed from a spool file.
  struct Upload {
    int fd = -1;
    curl_off_t offset = 0;
  };

  Http() : multi(curl_multi_init()), easy(curl_easy_init()) {}
  ~Http() {
    if (easy) curl_easy_cleanup(easy);
    if (multi) curl_multi_cleanup(multi);
  }

  static size_t Keep(char* data, size_t size, size_t n, void* user) {
    auto* body = static_cast<std::string*>(user);
    const size_t bytes = size * n;
    body->append(data, std::min(bytes, kMaxAnswerBody - std::min(kMaxAnswerBody, body->size())));
    return bytes;
  }
  static size_t Read(char* buf, size_t size, size_t n, void* user) {
    auto* up = static_cast<Upload*>(user);
    ssize_t got;
    do {
      got = ::pread(up->fd, buf, size * n, static_cast<off_t>(up->offset));
    } while (got < 0 && errno == EINTR);
    if (got < 0) return CURL_READFUNC_ABORT;
    up->offset += got;
    return static_cast<size_t>(got);
  }
  static int Seek(void* user, curl_off_t offset, int origin) {
    if (origin != SEEK_SET) return CURL_SEEKFUNC_CANTSEEK;
    static_cast<Upload*>(user)->offset = offset;
    return CURL_SEEKFUNC_OK;
  }

  // The options every request has.
  void Common(const DeliveryOptions& o, const std::string& url, curl_slist* headers, Answer& answer) {
    curl_easy_reset(easy);  // keeps the connections for reuse
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(o.request_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_PROXY, o.proxy.c_str());
    if (!o.ca_file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, o.ca_file.c_str());
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Http::Keep);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &answer.body);
  }

  Answer Post(const DeliveryOptions& o, const std::string& url, const std::string& body) {
    Answer answer;
    curl_slist* h = Headers(o, "Content-Type: application/json", "");
    Common(o, url, h, answer);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data());
    Perform(answer);
    curl_slist_free_all(h);
    return answer;
  }

  Answer Put(const DeliveryOptions& o, const std::string& url, int fd, uint64_t size, const std::string& sha256) {
    Answer answer;
    Upload up{fd, 0};
    curl_slist* h = Headers(o, "Content-Type: application/octet-stream", "X-Content-SHA256: " + sha256);
    Common(o, url, h, answer);
    curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    curl_easy_setopt(easy, CURLOPT_READFUNCTION, &Http::Read);
    curl_easy_setopt(easy, CURLOPT_READDATA, &up);
    curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, &Http::Seek);
    curl_easy_setopt(easy, CURLOPT_SEEKDATA, &up);
    Perform(answer);
    curl_slist_free_all(h);
    return answer;
  }

  static curl_slist* Headers(const DeliveryOptions& o, const std::string& type, const std::string& extra) {
    curl_slist* h = nullptr;
    h = curl_slist_append(h, ("Authorization: Bearer " + o.token).c_str());
    h = curl_slist_append(h, type.c_str());
    h = curl_slist_append(h, "Expect:");  // no 100-continue round trip
    if (!extra.empty()) h = curl_slist_append(h, extra.c_str());
    return h;
  }

  // Runs the request on `multi` until it ends or *stop is set.
  void Perform(Answer& answer) {
    if (!multi || !easy) {
      answer.error = "libcurl could not be initialised";
      return;
    }
    curl_multi_add_handle(multi, easy);
    int running = 1;
    CURLcode result = CURLE_OK;
    while (running) {
      if (curl_multi_perform(multi, &running) != CURLM_OK) {
        result = CURLE_FAILED_INIT;
        break;
      }
      if (!running) break;
      if (stop->load()) {
        answer.stopped = true;
        break;
      }
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg == CURLMSG_DONE && m->easy_handle == easy) result = m->data.result;
    }
    curl_multi_remove_handle(multi, easy);
    if (answer.stopped) return;
    if (result != CURLE_OK) {
      answer.error = curl_easy_strerror(result);
      return;
    }
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &answer.status);
  }
};

// --- the thread ---

namespace {
std::once_flag curl_init_once;
}  // namespace

Delivery::Delivery(Spool& spool, DeliveryOptions options)
    : spool_(spool), options_(std::move(options)), rng_(std::random_device{}()) {
  base_ = options_.collector;
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
}

Delivery::~Delivery() {
  Stop(std::chrono::hours(24));
  if (thread_.joinable()) thread_.join();
}

Status Delivery::Start() {
  if (thread_.joinable()) return Error{"delivery: already started"};
  if (base_.rfind("http://", 0) != 0 && base_.rfind("https://", 0) != 0) {
    return Error{"delivery: collector '" + options_.collector + "': expected an http:// or https:// URL"};
  }
  if (options_.token.empty()) return Error{"delivery: no token"};
  std::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  http_ = std::make_unique<Http>();
  if (!http_->multi || !http_->easy) return Error{"delivery: libcurl could not be initialised"};
  stop_flag_ = false;
  http_->stop = &stop_flag_;
  thread_ = std::thread([this] { Run(); });
  return Ok{};
}

void Delivery::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

bool Delivery::Stop(std::chrono::milliseconds deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_flag_ = true;
  cv_.notify_all();
  if (!thread_.joinable()) return true;
  if (http_ && http_->multi) curl_multi_wakeup(http_->multi);
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, deadline, [this] { return finished_; })) return false;
  lock.unlock();
  thread_.join();
  return true;
}

DeliveryCounters Delivery::Counters() const {
  DeliveryCounters c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = counters_;
  }
  c.spool = spool_.Stats();
  return c;
}

void Delivery::Log(const std::string& line) {
  if (options_.log) options_.log(line);
}

bool Delivery::Wait(std::chrono::milliseconds d, bool wakeable) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [&] { return stop_ || (wakeable && wake_); });
  return !stop_;
}

std::chrono::milliseconds Delivery::NextBackoff() {
  const int64_t max = std::max<int64_t>(1, options_.backoff_max.count());
  int64_t d = std::max<int64_t>(1, options_.backoff_initial.count());
  for (unsigned i = 0; i < failures_ && d < max; ++i) d *= 2;
  d = std::min(d, max);
  if (failures_ < 64) ++failures_;
  // Jitter: between half and all of it, so agents that failed together do
  // not come back together.
  std::uniform_int_distribution<int64_t> pick(d / 2, d);
  return std::chrono::milliseconds(pick(rng_));
}

void Delivery::Run() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
      wake_ = false;  // cleared before looking, so a Wake from now on is seen
    }
    Outcome out = DeliverEvents();
    if (out == Outcome::kDone || out == Outcome::kIdle) {
      const std::vector<SpoolResult> results = spool_.PendingResults();
      if (!results.empty()) {
        const Outcome r = DeliverResult(results.front());
        if (r != Outcome::kDone || out == Outcome::kIdle) out = r;
      }
    }
    bool go_on = true;
    switch (out) {
      case Outcome::kDone: break;
      case Outcome::kIdle: go_on = Wait(options_.idle_check, true); break;
      case Outcome::kFailed: go_on = Wait(NextBackoff(), false); break;
      case Outcome::kUnauthorized: go_on = Wait(options_.backoff_max, false); break;
      case Outcome::kStopped: go_on = false; break;
    }
    if (!go_on) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

Delivery::Outcome Delivery::DeliverEvents() {
  // ReadBatch counts a byte for each record's comma (or the closing
  // bracket); one more for the opening bracket.
  const size_t max_bytes = options_.max_batch_bytes > 1 ? options_.max_batch_bytes - 1 : 1;
  Result<SpoolBatch> batch = spool_.ReadBatch(options_.max_batch_records, max_bytes);
  if (!batch) {
    Failed(batch.error().message);
    return Outcome::kFailed;
  }
  const std::vector<SpoolRecord>& records = batch.value().records;
  if (records.empty()) return Outcome::kIdle;
  return SendRange(records, 0, records.size());
}

// Sends records [lo, hi); on 400/413 splits them to find the bad one.
Delivery::Outcome Delivery::SendRange(const std::vector<SpoolRecord>& records, size_t lo, size_t hi) {
  std::string body = "[";
  for (size_t i = lo; i < hi; ++i) {
    if (i > lo) body += ',';
    body += records[i].text;
  }
  body += ']';
  const std::string url = base_ + "/v1/events";
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.requests;
  }
  const Answer answer = http_->Post(options_, url, body);
  if (answer.status == 400 || answer.status == 413) {
    Succeeded();  // the collector is there and answers
    if (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      const Outcome first = SendRange(records, lo, mid);
      return first == Outcome::kDone ? SendRange(records, mid, hi) : first;
    }
    Log("collector refused an event (HTTP " + std::to_string(answer.status) + ": " + Clip(answer.body) +
        "); skipped: " + Clip(records[lo].text));
    if (Status s = spool_.Acknowledge(records[lo].end); !s) {
      Failed(s.error().message);
      return Outcome::kFailed;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.events_skipped;
    return Outcome::kDone;
  }
  const Outcome out = Judge(answer, "POST " + url);
  if (out != Outcome::kDone) return out;
  if (Status s = spool_.Acknowledge(records[hi - 1].end); !s) {
    Failed(s.error().message);
    return Outcome::kFailed;
  }
  std::lock_guard<std::mutex> lock(mu_);
  counters_.events_delivered += hi - lo;
  return Outcome::kDone;
}

Delivery::Outcome Delivery::DeliverResult(const SpoolResult& result) {
  const std::string url = base_ + "/v1/results/" + result.sweep + "/" + std::to_string(result.entry) + "/" + result.name;
  Result<UniqueFd> fd = spool_.OpenResult(result.id);
  if (!fd) {
    Failed(fd.error().message);
    return Outcome::kFailed;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.requests;
  }
  const Answer answer = http_->Put(options_, url, fd.value().get(), result.size, result.sha256);
  const bool refused = answer.status == 400 || answer.status == 413;
  if (refused) {
    Succeeded();
    Log("collector refused result " + result.sweep + "/" + std::to_string(result.entry) + "/" + result.name +
        " (HTTP " + std::to_string(answer.status) + ": " + Clip(answer.body) + "); dropped");
  } else if (const Outcome out = Judge(answer, "PUT " + url); out != Outcome::kDone) {
    return out;
  }
  if (Status s = spool_.ResultDone(result.id); !s) Log(s.error().message);
  std::lock_guard<std::mutex> lock(mu_);
  ++(refused ? counters_.results_skipped : counters_.results_delivered);
  return Outcome::kDone;
}

// A 2xx is kDone; the rest is recorded as a failure.
Delivery::Outcome Delivery::Judge(const Answer& answer, const std::string& what) {
  if (answer.stopped) return Outcome::kStopped;
  if (answer.status >= 200 && answer.status < 300) {
    Succeeded();
    return Outcome::kDone;
  }
  if (answer.status == 401) {
    const std::string error = what + ": HTTP 401: the collector does not take the token";
    {
      std::lock_guard<std::mutex> lock(mu_);
      counters_.unauthorized = true;
      counters_.last_error = error;
      counters_.last_error_time = UnixNow();
      ++counters_.retries;
    }
    if (!unauthorized_logged_) {
      Log(error + "; retrying every " + std::to_string(options_.backoff_max.count()) + " ms");
    }
    unauthorized_logged_ = true;
    return Outcome::kUnauthorized;
  }
  Failed(what + ": " + (answer.status ? "HTTP " + std::to_string(answer.status) + " " + Clip(answer.body, 100) : answer.error));
  return Outcome::kFailed;
}

void Delivery::Failed(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.unauthorized = false;
  counters_.last_error = error;
  counters_.last_error_time = UnixNow();
  ++counters_.retries;
}

void Delivery::Succeeded() {
  failures_ = 0;
  unauthorized_logged_ = false;
  std::lock_guard<std::mutex> lock(mu_);
  counters_.unauthorized = false;
  counters_.last_success_time = UnixNow();
}

}  // namespace ix
