// Delivery: the agent's one thread that empties the spool into the
// collector over HTTP(S) (libcurl), as the agent/collector protocol says:
//
//   POST COLLECTOR/v1/events            a JSON array of spooled events
//                                       (at most 1000 and 4 MiB a request)
//   PUT  COLLECTOR/v1/results/SWEEP/ENTRY/NAME
//                                       a result file, streamed from the
//                                       spool, with X-Content-SHA256
//
// both with `Authorization: Bearer TOKEN`. Delivery is at least once:
// records are acknowledged in the spool only after the collector answered
// 200 for them (the collector deduplicates by id), a result is removed only
// after a 2xx.
//
// What each answer does:
//   2xx                   acknowledged; the backoff starts over
//   401                   logged once (until another answer comes), then
//                         retried every backoff_max: the token may be fixed
//                         on the collector's side
//   400 or 413 (events)   the batch is split in halves until the record the
//                         collector refuses is alone; that one is logged and
//                         skipped (acknowledged), so one bad record never
//                         blocks the queue; the good ones go through
//   400 or 413 (result)   logged and dropped (a sha256 mismatch or a file
//                         the collector will never take)
//   anything else         (no connection, a timeout, 5xx, 404...) retried
//                         with exponential backoff and jitter:
//                         backoff_initial doubling to backoff_max
//
// Threads: the owner (the poll loop) calls Start, Wake, Counters and Stop;
// the delivery thread calls the spool's delivering side (ReadBatch,
// Acknowledge, the results). `log` is called on the delivery thread.
//
// Invariants: every request has a connect timeout and a total timeout;
// Stop() aborts a transfer in flight (curl_multi_wakeup) and every wait, so
// the thread ends within about a second of it; nothing is acknowledged
// that the collector did not take.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/base/result.h"
#include "node_agent/spool.h"

namespace ix {

// The bearer token in the file at `path`, read once through one
// descriptor: opened O_NOFOLLOW, it must be a regular file owned by root or
// the euid, not accessible by group or others (0600 or stricter), 1 to
// 4096 bytes. Trailing blanks and line ends are dropped; what is left must
// be printable ASCII without spaces (it goes into an HTTP header). Errors
// name the file and what is wrong.
Result<std::string> ReadTokenFile(const std::string& path);
// The same checks on a file already open at `fd` (`what` names it in
// errors), which may also be owned by `owner`: a sweep's token, which its
// job hands the agent as a descriptor.
Result<std::string> ReadTokenFd(int fd, const std::string& what, uid_t owner);

struct DeliveryOptions {
  std::string collector;  // "http(s)://HOST[:PORT][/PREFIX]"; the paths above are appended
  std::string token;      // from ReadTokenFile
  std::string ca_file;    // PEM file to verify the collector's certificate by; "" = the system's
  std::string proxy;      // "" = none (the environment's proxy variables are ignored)
  size_t max_batch_records = 1000;
  size_t max_batch_bytes = 4 << 20;  // the request body, brackets and commas included
  std::chrono::milliseconds backoff_initial{200};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{60000};  // the whole request
  std::chrono::milliseconds idle_check{5000};        // how often an idle thread looks at the spool unwoken
  std::function<void(const std::string&)> log;       // one line per notable event; may be empty
};

// For /metrics: counts since Start, and the spool's queue. A snapshot.
struct DeliveryCounters {
  uint64_t events_delivered = 0;   // acknowledged after a 200
  uint64_t events_skipped = 0;     // refused alone by the collector (400/413) and dropped
  uint64_t results_delivered = 0;
  uint64_t results_skipped = 0;    // refused by the collector (400/413) and dropped
  uint64_t requests = 0;           // HTTP requests started
  uint64_t retries = 0;            // failed attempts that are retried after a backoff
  bool unauthorized = false;       // the last answer was 401
  std::string last_error;          // what went wrong last ("" when nothing has)
  double last_error_time = 0;      // unix seconds; 0 when never
  double last_success_time = 0;    // unix seconds of the last 2xx; 0 when never
  SpoolStats spool;                // queue depth (pending_records) and bytes in the spool
};

// The delivery thread and its state. Invariant: at most one thread runs,
// between Start and Stop; the Spool outlives the Delivery.
class Delivery {
 public:
  Delivery(Spool& spool, DeliveryOptions options);
  // Stops (without a deadline: it waits for the thread) and joins.
  ~Delivery();
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  // Checks the options (an http:// or https:// collector URL, a token) and
  // starts the thread. Call it before any other thread of the program uses
  // libcurl (it runs curl_global_init once). An Error starts nothing.
  Status Start();
  // There is something new in the spool: an idle thread looks at once. (A
  // thread backing off after a failure keeps backing off.)
  void Wake();
  // Asks the thread to stop, aborting a request in flight, and waits up to
  // `deadline` for it. True when it has ended (then joined); false when the
  // deadline passed first (the destructor still joins).
  bool Stop(std::chrono::milliseconds deadline);
  DeliveryCounters Counters() const;

 private:
  enum class Outcome { kDone, kIdle, kFailed, kUnauthorized, kStopped };
  struct Http;     // one libcurl handle pair, used by the thread only
  struct Answer;   // what one request got

  void Run();
  Outcome DeliverEvents();
  Outcome SendRange(const std::vector<SpoolRecord>& records, size_t lo, size_t hi);
  Outcome DeliverResult(const SpoolResult& result);
  Outcome Judge(const Answer& answer, const std::string& what);
  void Failed(const std::string& error);
  void Succeeded();
  void Log(const std::string& line);
  // Waits `d`, or until Stop (and Wake, when `wakeable`); false when stopping.
  bool Wait(std::chrono::milliseconds d, bool wakeable);
  std::chrono::milliseconds NextBackoff();

  Spool& spool_;
  const DeliveryOptions options_;
  std::string base_;  // the collector URL without a trailing '/'
  std::unique_ptr<Http> http_;

  mutable std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  bool stop_ = false;
  bool wake_ = false;
  bool finished_ = false;
  DeliveryCounters counters_;
  std::atomic<bool> stop_flag_{false};  // stop_, for libcurl's loop without the mutex

  // The thread's own.
  unsigned failures_ = 0;  // in a row, for the backoff
  bool unauthorized_logged_ = false;
  std::mt19937 rng_;
  std::thread thread_;
};

}  // namespace ix
