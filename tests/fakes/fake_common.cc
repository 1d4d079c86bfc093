#include "fake_common.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace ixfake {

// ---------------------------------------------------------------- arguments

bool is_flag_token(std::string_view token) {
  if (token.size() >= 3 && token[0] == '-' && token[1] == '-') return true;
  if (token.size() >= 2 && token[0] == '-' && token[1] != '-') {
    unsigned char c = static_cast<unsigned char>(token[1]);
    return std::isalpha(c) != 0;
  }
  return false;
}

namespace {
std::string normalize_flag_name(std::string_view name) {
  std::string out(name);
  std::size_t i = 0;
  while (i < out.size() && out[i] == '-') ++i;
  for (; i < out.size(); ++i) {
    if (out[i] == '_') out[i] = '-';
  }
  return out;
}
}  // namespace

const LooseArgs::Flag* LooseArgs::last(std::string_view name) const {
  for (auto it = flags.rbegin(); it != flags.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

LooseArgs parse_loose(const std::vector<std::string>& args,
                      const std::set<std::string, std::less<>>& multi_value,
                      const std::set<std::string, std::less<>>& no_value) {
  LooseArgs out;
  bool only_positionals = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (only_positionals) {
      out.positionals.push_back(token);
      continue;
    }
    if (token == "--") {
      only_positionals = true;
      continue;
    }
    if (!is_flag_token(token)) {
      out.positionals.push_back(token);
      continue;
    }
    LooseArgs::Flag flag;
    std::size_t eq = token.find('=');
    if (token.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag.name = normalize_flag_name(std::string_view(token).substr(0, eq));
      flag.values.push_back(token.substr(eq + 1));
    } else {
      flag.name = normalize_flag_name(token);
      bool takes_value = no_value.count(flag.name) == 0;
      if (takes_value && i + 1 < args.size() && !is_flag_token(args[i + 1]) && args[i + 1] != "--") {
        flag.values.push_back(args[++i]);
      }
    }
    if (!flag.values.empty() && multi_value.count(flag.name) != 0) {
      while (i + 1 < args.size() && !is_flag_token(args[i + 1]) && args[i + 1] != "--") {
        flag.values.push_back(args[++i]);
      }
    }
    out.flags.push_back(std::move(flag));
  }
  return out;
}

bool StrictArgs::has(std::string_view name) const {
  for (const auto& [n, v] : given) {
    if (n == name) return true;
  }
  return false;
}

std::optional<std::string> StrictArgs::value(std::string_view name) const {
  for (const auto& [n, v] : given) {
    if (n == name && !v.empty()) return v.front();
  }
  return std::nullopt;
}

std::vector<std::string> StrictArgs::values(std::string_view name) const {
  for (const auto& [n, v] : given) {
    if (n == name) return v;
  }
  return {};
}

StrictArgs parse_strict(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs,
                        bool allow_positionals) {
  StrictArgs out;
  auto find_spec = [&](std::string_view name) -> const OptionSpec* {
    for (const auto& s : specs) {
      if (s.name == name) return &s;
    }
    return nullptr;
  };
  auto shown = [](const OptionSpec& s) {
    return s.arity == Arity::kNone ? s.name
           : s.arity == Arity::kOne ? s.name + " <" + s.value_name + ">"
                                    : s.name + " <" + s.value_name + ">...";
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (!is_flag_token(token)) {
      if (allow_positionals) {
        out.positionals.push_back(token);
        continue;
      }
      out.error = "error: unexpected argument '" + token + "' found";
      return out;
    }
    std::string name = token;
    std::optional<std::string> inline_value;
    std::size_t eq = token.find('=');
    if (token.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = token.substr(0, eq);
      inline_value = token.substr(eq + 1);
    }
    const OptionSpec* spec = find_spec(name);
    if (spec == nullptr) {
      out.error = "error: unexpected argument '" + name + "' found";
      return out;
    }
    if (out.has(spec->name)) {
      out.error = "error: the argument '" + shown(*spec) + "' cannot be used multiple times";
      return out;
    }
    std::vector<std::string> values;
    if (spec->arity == Arity::kNone) {
      if (inline_value) {
        out.error = "error: unexpected value '" + *inline_value + "' for '" + spec->name +
                    "' found; no more were expected";
        return out;
      }
    } else {
      if (inline_value) {
        values.push_back(*inline_value);
      } else if (i + 1 < args.size() && !is_flag_token(args[i + 1])) {
        values.push_back(args[++i]);
      }
      if (values.empty()) {
        out.error = "error: a value is required for '" + shown(*spec) + "' but none was supplied";
        return out;
      }
      if (spec->arity == Arity::kMany) {
        while (i + 1 < args.size() && !is_flag_token(args[i + 1])) values.push_back(args[++i]);
      }
    }
    out.given.emplace_back(spec->name, std::move(values));
  }
  return out;
}

// ------------------------------------------------------------------ numbers

std::optional<long long> parse_int(std::string_view text, long long min, long long max) {
  if (text.empty()) return std::nullopt;
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<double> parse_seconds(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::string s(text);
  if (std::isspace(static_cast<unsigned char>(s.front())) != 0) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

// ------------------------------------------------------------ consistent hash

std::uint64_t hash64(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

HashRing::HashRing(const std::vector<std::string>& members, int vnodes) : members_(members.size()) {
  if (vnodes < 1) vnodes = 1;
  points_.reserve(members.size() * static_cast<std::size_t>(vnodes));
  for (std::size_t m = 0; m < members.size(); ++m) {
    for (int v = 0; v < vnodes; ++v) {
      points_.emplace_back(hash64(members[m] + "#" + std::to_string(v)),
                           static_cast<std::uint32_t>(m));
    }
  }
  std::sort(points_.begin(), points_.end());
}

std::size_t HashRing::lookup(std::string_view key) const {
  std::uint64_t h = hash64(key);
  auto it = std::lower_bound(points_.begin(), points_.end(), std::make_pair(h, std::uint32_t{0}));
  if (it == points_.end()) it = points_.begin();
  return it->second;
}

// --------------------------------------------------------------------- URLs

HttpUrl parse_http_url(std::string_view url) {
  HttpUrl out;
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    out.error = "'" + std::string(url) + "': https is not supported (plain http only)";
    return out;
  }
  if (url.rfind(kScheme, 0) != 0) {
    out.error = "'" + std::string(url) + "': expected http://HOST[:PORT][/PATH]";
    return out;
  }
  std::string_view rest = url.substr(kScheme.size());
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      out.error = "'" + std::string(url) + "': unterminated [IPv6] host";
      return out;
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        out.error = "'" + std::string(url) + "': unexpected text after ]";
        return out;
      }
      port_text = after.substr(1);
      if (port_text.empty()) port_text = "x";
    }
  } else {
    std::size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) port_text = "x";
    }
  }
  if (out.host.empty()) {
    out.error = "'" + std::string(url) + "': missing host";
    return out;
  }
  if (!port_text.empty()) {
    auto port = parse_int(port_text, 1, 65535);
    if (!port) {
      out.error = "'" + std::string(url) + "': port must be 1-65535";
      return out;
    }
    out.port = static_cast<int>(*port);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.base_path = std::string(path);
  return out;
}

// ---------------------------------------------------------------------- SSE

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  buffer_.append(bytes);
  std::vector<std::string> events;
  for (;;) {
    // An event ends at an empty line.
    std::size_t end = std::string::npos;
    std::size_t sep_len = 0;
    for (std::size_t i = 0; i < buffer_.size(); ++i) {
      if (buffer_[i] != '\n') continue;
      if (i + 1 < buffer_.size() && buffer_[i + 1] == '\n') {
        end = i;
        sep_len = 2;
        break;
      }
      if (i + 2 < buffer_.size() && buffer_[i + 1] == '\r' && buffer_[i + 2] == '\n') {
        end = i;
        sep_len = 3;
        break;
      }
    }
    if (end == std::string::npos) break;
    std::string block = buffer_.substr(0, end);
    buffer_.erase(0, end + sep_len);
    std::string data;
    bool has_data = false;
    std::size_t pos = 0;
    while (pos <= block.size()) {
      std::size_t nl = block.find('\n', pos);
      std::string line = block.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("data:", 0) == 0) {
        std::string value = line.substr(5);
        if (!value.empty() && value.front() == ' ') value.erase(0, 1);
        if (has_data) data += '\n';
        data += value;
        has_data = true;
      }
      if (nl == std::string::npos) break;
      pos = nl + 1;
    }
    if (has_data) events.push_back(std::move(data));
  }
  return events;
}

// --------------------------------------------------------------- statistics

std::optional<double> percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  if (rank == 0) rank = 1;
  return values[std::min(rank, values.size()) - 1];
}

// --------------------------------------------------------- text and output

std::string write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return tmp + ": " + std::strerror(errno);
  std::size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string err = tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return err;
    }
    off += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    std::string err = tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return err;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return err;
  }
  return {};
}

namespace {
std::string& log_tag() {
  static std::string tag = "fake";
  return tag;
}

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string vformat(const char* format, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n <= 0) return {};
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), format, ap);
  out.resize(static_cast<std::size_t>(n));
  return out;
}
}  // namespace

void set_log_tag(std::string tag) { log_tag() = std::move(tag); }

void log_line(std::string_view message) {
  struct timeval tv {};
  ::gettimeofday(&tv, nullptr);
  struct tm tm {};
  ::gmtime_r(&tv.tv_sec, &tm);
  char stamp[96];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(tv.tv_usec / 1000));
  std::string line = std::string(stamp) + " " + log_tag() + " pid " + std::to_string(::getpid()) +
                     ": " + std::string(message) + "\n";
  write_all(STDOUT_FILENO, line);
}

void logf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::string msg = vformat(format, ap);
  va_end(ap);
  log_line(msg);
}

std::string strprintf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::string msg = vformat(format, ap);
  va_end(ap);
  return msg;
}

void start_program(std::string tag) {
  ::signal(SIGPIPE, SIG_IGN);
  set_log_tag(std::move(tag));
}

void usage_exit(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const std::string text = vformat(format, ap);
  va_end(ap);
  std::fputs(text.c_str(), stderr);
  std::exit(2);
}

void server_socket_options(int fd) {
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
}

void raise_listen_backlog(int fd) {
  if (fd >= 0) ::listen(fd, 2048);
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void sleep_s(double seconds) {
  if (seconds <= 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

namespace {
bool g_faulthandler = false;

// faulthandler's own format; written with write(2) alone (async-signal-safe).
void faulthandler_dump(int) {
  static const char kStacks[] =
      "Thread 0x00007f5a3c1ff640 (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/vllm/v1/engine/core.py\", line 781 in run_busy_loop\n"
      "\n"
      "Current thread 0x00007f5a4d2e8740 (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/vllm/entrypoints/openai/api_server.py\", line 1230 in run_server\n";
  (void)!::write(2, kStacks, sizeof kStacks - 1);
}
}  // namespace

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  if (g_faulthandler) sigdelset(&set, SIGUSR1);
  return set;
}

void enable_faulthandler_dump() {
  struct sigaction sa {};
  sa.sa_handler = faulthandler_dump;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGUSR1, &sa, nullptr);
  g_faulthandler = true;
}

}  // namespace ixfake
