// Shared helpers of the test doubles in tests/fakes/ (fake vllm, fake
// vllm-router, ix-fake-client): argument parsing, the consistent-hash ring,
// URL and number parsing, SSE framing, percentiles, logging. No HTTP library
// here, so everything is unit-testable (fake_common_test.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <signal.h>
#include <sys/types.h>

namespace ixfake {

// ---------------------------------------------------------------- arguments

// True for a token that names a flag: "--x..." or "-x..." (a dash followed by
// a letter), so that "-1" and "-0.5" are values, and "--" alone is not a flag.
bool is_flag_token(std::string_view token);

// Permissive parsing in the manner of the real `vllm serve` (which has
// hundreds of flags): every flag is accepted. A flag takes the next token as
// its value when that token is not itself a flag; `--flag=value` works too.
// A flag listed in `multi_value` also takes every further non-flag token
// (like argparse nargs='+'); one listed in `no_value` (argparse's
// store_true, e.g. --headless) never takes the next token, so
// `--headless /models/m` leaves the model a positional (`--headless=x` still
// records x, for the caller to refuse). Names are kept as written, except that
// underscores after the leading dashes become dashes, as vLLM does.
// "--" ends the flags: every later token is a positional.
struct LooseArgs {
  struct Flag {
    std::string name;                 // "--port", "-dp"
    std::vector<std::string> values;  // empty for a boolean flag
  };
  std::vector<std::string> positionals;
  std::vector<Flag> flags;

  // The last occurrence of `name` (argparse semantics: the last one wins).
  const Flag* last(std::string_view name) const;
  bool has(std::string_view name) const { return last(name) != nullptr; }
};
LooseArgs parse_loose(const std::vector<std::string>& args,
                      const std::set<std::string, std::less<>>& multi_value = {},
                      const std::set<std::string, std::less<>>& no_value = {});

// Strict parsing in the manner of clap (the real vllm-router and most Rust
// CLIs): only declared options; an unknown one is an error.
enum class Arity { kNone, kOne, kMany };
struct OptionSpec {
  std::string name;        // "--port"
  Arity arity;
  std::string value_name;  // "PORT", shown in messages
};
struct StrictArgs {
  // Values per option name, in order; a kNone option that was given maps to
  // an empty vector.
  std::vector<std::pair<std::string, std::vector<std::string>>> given;
  std::vector<std::string> positionals;
  std::string error;  // empty on success; a clap-style "error: ..." line

  bool ok() const { return error.empty(); }
  bool has(std::string_view name) const;
  // The single value of a kOne option, or nullopt when it was not given.
  std::optional<std::string> value(std::string_view name) const;
  std::vector<std::string> values(std::string_view name) const;
};
StrictArgs parse_strict(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs,
                        bool allow_positionals = false);

// ------------------------------------------------------------------ numbers

// Whole decimal integer in [min, max] (no sign other than '-', no spaces).
std::optional<long long> parse_int(std::string_view text, long long min, long long max);
// A finite, non-negative number of seconds ("0", "0.25", "90").
std::optional<double> parse_seconds(std::string_view text);

// ------------------------------------------------------------ consistent hash

// 64-bit FNV-1a followed by the splitmix64 finalizer: stable across runs,
// processes and machines, and well spread even for keys that differ only in
// their last character ("sess-1", "sess-2").
std::uint64_t hash64(std::string_view text);

// A hash ring with `vnodes` virtual nodes per member: a key maps to the first
// virtual node clockwise from its hash. Adding or removing a member moves only
// the keys that land on that member's virtual nodes.
class HashRing {
 public:
  static constexpr int kDefaultVirtualNodes = 160;
  explicit HashRing(const std::vector<std::string>& members, int vnodes = kDefaultVirtualNodes);
  // Index into `members` for `key`; the ring must not be empty.
  std::size_t lookup(std::string_view key) const;
  bool empty() const { return points_.empty(); }
  std::size_t members() const { return members_; }

 private:
  std::vector<std::pair<std::uint64_t, std::uint32_t>> points_;  // sorted by hash
  std::size_t members_ = 0;
};

// --------------------------------------------------------------------- URLs

// "http://host:port[/base]" (also "http://[::1]:8000"). No https: the fakes
// speak plain HTTP only.
struct HttpUrl {
  std::string host;
  int port = 80;
  std::string base_path;  // "" or "/prefix" without a trailing slash
  std::string error;      // empty on success
  bool ok() const { return error.empty(); }
};
HttpUrl parse_http_url(std::string_view url);

// ---------------------------------------------------------------------- SSE

// Splits a byte stream of server-sent events into the payloads of their
// `data:` fields (one string per event; several data lines are joined with
// '\n'). Accepts "\n" and "\r\n" line ends and arbitrary chunking.
class SseParser {
 public:
  std::vector<std::string> feed(std::string_view bytes);
  // Bytes received after the last complete event.
  const std::string& pending() const { return buffer_; }

 private:
  std::string buffer_;
};

// --------------------------------------------------------------- statistics

// Nearest-rank percentile (p in [0, 100]) of `values`; nullopt when empty.
std::optional<double> percentile(std::vector<double> values, double p);

// --------------------------------------------------------- text and output

// Writes `content` to `path` through a temporary file and rename, so a reader
// never sees half a file. Returns an error message, empty on success.
std::string write_file_atomic(const std::string& path, const std::string& content);

// Log lines: "2025-12-02T14:20:01.123Z TAG pid N: message", one write(2) per
// line to stdout (unbuffered, safe from several threads and after fork).
void set_log_tag(std::string tag);
void log_line(std::string_view message);
[[gnu::format(printf, 1, 2)]] void logf(const char* format, ...);
[[gnu::format(printf, 1, 2)]] std::string strprintf(const char* format, ...);

// A fake's first step in main(): log lines tagged `tag`, and SIGPIPE ignored
// (a peer that hangs up makes a write fail with EPIPE instead of killing the
// fake).
void start_program(std::string tag);

// A rejected command line or switch: the printf-formatted text on stderr as
// it is, then exit status 2 (as argparse and clap exit).
[[noreturn, gnu::format(printf, 1, 2)]] void usage_exit(const char* format, ...);

// Listening-socket options for every fake server: SO_REUSEADDR only, as
// uvicorn and axum do. cpp-httplib 0.11's default sets SO_REUSEPORT instead,
// which lets a second server bind the same port without an error (the kernel
// then splits connections between them), hiding exactly the port collisions
// the tests must see.
void server_socket_options(int fd);
// cpp-httplib 0.11 listens with a backlog of 5, so a burst of connections
// overflows the accept queue and clients stall a second in SYN retransmits.
// Calling listen() again on the listening socket raises it (uvicorn: 2048).
void raise_listen_backlog(int fd);

// Monotonic seconds.
double now_s();
// Sleeps `seconds` (no-op for <= 0).
void sleep_s(double seconds);

// The set of signals the fakes handle synchronously with sigwait: TERM, INT,
// HUP, CHLD, USR1, USR2 (USR1 not once enable_faulthandler_dump ran).
// Block it in main() before starting any thread.
sigset_t handled_signals();

// As Python's `faulthandler.register(signal.SIGUSR1)` in a vLLM process: a
// SIGUSR1 handler (so /proc/PID/status's SigCgt shows it) that writes
// every thread's Python stack, canned, to stderr, and SIGUSR1 left out of
// handled_signals(). Call in main() before handled_signals().
void enable_faulthandler_dump();

}  // namespace ixfake
