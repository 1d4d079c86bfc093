#include "core/process/engine_metrics.h"

#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

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
  // A quoted label value, unescaped into `*out` when `out` is set (\\, \"
  // and \n; any other escaped character stands for itself). False when it
  // is not closed on the line.
  bool ReadQuoted(std::string* out) {
    if (!Take('"')) return false;
    while (!AtEnd()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (AtEnd()) return false;
        c = s_[pos_++];
        if (c == 'n') c = '\n';
      }
      if (out) out->push_back(c);
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
// parts), from the '{'. The value of the first label named `want` goes into
// `*value` (set); other values are only skipped. False when malformed.
bool ReadLabels(LineCursor& c, std::string_view want, std::optional<std::string>& value) {
  if (!c.Take('{')) return false;
  for (;;) {
    c.SkipBlanks();
    if (c.Take('}')) return true;
    const std::string_view name = c.Name(false);
    if (name.empty()) return false;
    c.SkipBlanks();
    if (!c.Take('=')) return false;
    c.SkipBlanks();
    const bool keep = !value && name == want;
    std::string read;
    if (!c.ReadQuoted(keep ? &read : nullptr)) return false;
    if (keep) value = std::move(read);
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

// Calls `on_sample(name, label, value)` for each sample line of `text`
// that parses, `label` the value of its label `label_name` ("" when it has
// none; label_name "" reads none); other lines are skipped.
template <class OnSample>
void ForEachSample(std::string_view text, std::string_view label_name, OnSample on_sample) {
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
    std::optional<std::string> label;
    if (c.Peek() == '{' && !ReadLabels(c, label_name, label)) continue;
    c.SkipBlanks();
    const std::optional<double> value = ParseValue(c.Token());
    if (!value) continue;
    c.SkipBlanks();
    c.Token();  // a timestamp, not needed
    c.SkipBlanks();
    if (!c.AtEnd()) continue;  // more than name, labels, value and timestamp
    on_sample(name, label ? *label : std::string(), *value);
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
  ForEachSample(text, "", [&](std::string_view name, const std::string&, double v) {
    if (name == metric_name) AddFinite(sum, v);
  });
  return FiniteOrUnset(sum);
}

std::map<std::string, double> SumPrometheusSamplesBy(std::string_view text, std::string_view metric_name,
                                                     std::string_view label_name) {
  std::map<std::string, std::optional<double>> sums;
  ForEachSample(text, label_name, [&](std::string_view name, const std::string& label, double v) {
    if (name == metric_name && std::isfinite(v)) AddFinite(sums[label], v);
  });
  std::map<std::string, double> out;
  for (const auto& [label, sum] : sums) {
    if (const std::optional<double> finite = FiniteOrUnset(sum)) out.emplace(label, *finite);
  }
  return out;
}

EngineReading ParseEngineMetrics(std::string_view text) {
  EngineReading r;
  ForEachSample(text, "", [&](std::string_view name, const std::string&, double v) {
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

}  // namespace ix
