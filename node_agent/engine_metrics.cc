#include "node_agent/engine_metrics.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include "core/base/result.h"
#include "node_agent/loopback_fetch.h"

namespace ix {
namespace {

constexpr size_t kNpos = std::string_view::npos;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A cursor over one line. Every read checks the end: the parser is fed
// whatever a server sent.
class LineCursor {
 public:
  explicit LineCursor(std::string_view line) : s_(line) {}

  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return AtEnd() ? '\0' : s_[pos_]; }
  bool Take(char c) {
    if (Peek() != c || AtEnd()) return false;
    ++pos_;
    return true;
  }
  // Skips blanks; true when there was at least one.
  bool SkipBlanks() {
    const size_t start = pos_;
    while (!AtEnd() && IsBlank(s_[pos_])) ++pos_;
    return pos_ > start;
  }
  // A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or a label name (no ':');
  // "" when none starts here.
  std::string_view Name(bool colons) {
    const size_t start = pos_;
    const auto ok = [&](char c, bool first) {
      return IsAlpha(c) || (colons && c == ':') || (!first && IsDigit(c));
    };
    while (!AtEnd() && ok(s_[pos_], pos_ == start)) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // A quoted label value, its escapes skipped over (only the sample's
  // name and value matter here). False when it is not closed on the line.
  bool SkipQuoted() {
    if (!Take('"')) return false;
    while (!AtEnd()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (AtEnd()) return false;
        ++pos_;
      }
    }
    return false;
  }
  // The text up to the next blank or the end.
  std::string_view Token() {
    const size_t start = pos_;
    while (!AtEnd() && !IsBlank(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// `{name="value",...}` (a trailing comma allowed, blanks around the
// parts), from the '{'. False when malformed.
bool SkipLabels(LineCursor& c) {
  if (!c.Take('{')) return false;
  for (;;) {
    c.SkipBlanks();
    if (c.Take('}')) return true;
    if (c.Name(false).empty()) return false;
    c.SkipBlanks();
    if (!c.Take('=')) return false;
    c.SkipBlanks();
    if (!c.SkipQuoted()) return false;
    c.SkipBlanks();
    if (c.Take(',')) continue;
    return c.Take('}');
  }
}

// A sample value as Prometheus writes it (Go's ParseFloat): decimal or
// exponent notation, NaN, +Inf, -Inf, a leading '+'. Unset when `token` is
// not wholly a number.
std::optional<double> ParseValue(std::string_view token) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  if (token.empty() || token.front() == '+') return std::nullopt;
  double v = 0;
  const char* end = token.data() + token.size();
  const auto r = std::from_chars(token.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

// Calls `on_sample(name, value)` for each sample line of `text` that
// parses; other lines are skipped.
template <class OnSample>
void ForEachSample(std::string_view text, OnSample on_sample) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == kNpos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineCursor c(line);
    c.SkipBlanks();
    if (c.AtEnd() || c.Peek() == '#') continue;
    const std::string_view name = c.Name(true);
    if (name.empty()) continue;
    c.SkipBlanks();
    if (c.Peek() == '{' && !SkipLabels(c)) continue;
    c.SkipBlanks();
    const std::optional<double> value = ParseValue(c.Token());
    if (!value) continue;
    c.SkipBlanks();
    c.Token();  // a timestamp, not needed
    c.SkipBlanks();
    if (!c.AtEnd()) continue;  // more than name, labels, value and timestamp
    on_sample(name, *value);
  }
}

// Adds `v` to `sum` when finite.
void AddFinite(std::optional<double>& sum, double v) {
  if (std::isfinite(v)) sum = sum.value_or(0) + v;
}

// A sum of finite samples can still overflow to infinity, which equals
// itself: a counter that "stood still" would fake a hang. No evidence.
std::optional<double> FiniteOrUnset(std::optional<double> v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

}  // namespace

std::optional<double> SumPrometheusSamples(std::string_view text, std::string_view metric_name) {
  std::optional<double> sum;
  ForEachSample(text, [&](std::string_view name, double v) {
    if (name == metric_name) AddFinite(sum, v);
  });
  return FiniteOrUnset(sum);
}

EngineReading ParseEngineMetrics(std::string_view text) {
  EngineReading r;
  ForEachSample(text, [&](std::string_view name, double v) {
    if (name == kVllmRequestsRunning) AddFinite(r.requests_running, v);
    if (name == kVllmGenerationTokens) AddFinite(r.generation_tokens, v);
  });
  r.requests_running = FiniteOrUnset(r.requests_running);
  r.generation_tokens = FiniteOrUnset(r.generation_tokens);
  return r;
}

EngineReading CombineReadings(const std::vector<EngineReading>& engines) {
  EngineReading sum;
  if (engines.empty()) return sum;
  bool running_known = true, tokens_known = true;
  for (const EngineReading& e : engines) {
    running_known = running_known && e.requests_running.has_value();
    tokens_known = tokens_known && e.generation_tokens.has_value();
    if (!e.error.empty()) sum.error += (sum.error.empty() ? "" : "; ") + e.error;
  }
  for (const EngineReading& e : engines) {
    if (running_known) sum.requests_running = sum.requests_running.value_or(0) + *e.requests_running;
    if (tokens_known) sum.generation_tokens = sum.generation_tokens.value_or(0) + *e.generation_tokens;
  }
  sum.requests_running = FiniteOrUnset(sum.requests_running);
  sum.generation_tokens = FiniteOrUnset(sum.generation_tokens);
  return sum;
}

std::vector<EngineReading> ReadEngineMetrics(const std::vector<std::string>& urls, std::chrono::milliseconds timeout) {
  std::vector<Result<std::string>> bodies = FetchLoopback(urls, timeout);
  std::vector<EngineReading> readings;
  readings.reserve(bodies.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    if (bodies[i]) {
      readings.push_back(ParseEngineMetrics(bodies[i].value()));
    } else {
      EngineReading failed;
      failed.error = bodies[i].error().message;
      readings.push_back(std::move(failed));
    }
  }
  return readings;
}

}  // namespace ix
