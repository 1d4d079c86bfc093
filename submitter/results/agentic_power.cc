#include "submitter/results/agentic_power.h"

#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "submitter/results/agentic_records.h"
#include "submitter/results/power_aggregate.h"
#include "submitter/results/python_json.h"

namespace ix {
namespace {

using rapidjson::Value;

// The parts of an ISO 8601 date-time as fromisoformat reads them.
struct IsoTime {
  int64_t days = 0;           // since 1970-01-01
  int64_t micros = 0;         // into the day
  std::optional<int> offset;  // minutes east of UTC; none: naive
};

// Howard Hinnant's days_from_civil.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::optional<IsoTime> ParseIso(std::string s) {
  s = std::string(Trim(s, " \t\n\r\v\f"));
  for (size_t z; (z = s.find('Z')) != std::string::npos;) s.replace(z, 1, "+00:00");
  static const std::regex kIso(
      R"((\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2})(?::?(\d{2})(?::?(\d{2})(?:[.,](\d+))?)?)?)?)"
      R"((?:([+-])(\d{2}):?(\d{2})?(?::?\d{2}(?:\.\d+)?)?)?)");
  std::smatch m;
  if (!std::regex_match(s, m, kIso)) return std::nullopt;
  auto num = [&](int i) { return m[i].matched ? std::strtoll(m.str(i).c_str(), nullptr, 10) : 0LL; };
  const int64_t mo = num(2), d = num(3), h = num(4), mi = num(5), sec = num(6);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  std::string frac = m[7].matched ? m.str(7).substr(0, 6) : "";
  frac.resize(6, '0');
  IsoTime t;
  t.days = DaysFromCivil(num(1), mo, d);
  t.micros = ((h * 60 + mi) * 60 + sec) * 1000000 + std::strtoll(frac.c_str(), nullptr, 10);
  if (m[8].matched) t.offset = static_cast<int>((m.str(8) == "-" ? -1 : 1) * (num(9) * 60 + num(10)));
  return t;
}

// _captured_timezone: the offset in agentic_power_timezone_offset.txt
// (`date +%z`: "-0700"), or the reason it is unusable.
std::optional<int> CapturedOffset(const std::string& result_dir, std::string& reason) {
  int err = 0;
  const std::string path = result_dir + "/agentic_power_timezone_offset.txt";
  const std::string text = ReadFileText(path, &err);
  if (err) return reason = err == ENOENT ? "profile_timezone_offset_missing" : "profile_timezone_offset_invalid", std::nullopt;
  static const std::regex kOffset(R"(([+-])(\d{2}):?(\d{2}))");
  std::smatch m;
  const std::string v(Trim(text, " \t\n\r\v\f"));
  if (!std::regex_match(v, m, kOffset)) return reason = "profile_timezone_offset_invalid", std::nullopt;
  const int h = std::atoi(m.str(2).c_str()), mi = std::atoi(m.str(3).c_str());
  if (h > 23 || mi > 59) return reason = "profile_timezone_offset_invalid", std::nullopt;
  return (m.str(1) == "+" ? 1 : -1) * (h * 60 + mi);
}

// _parse_profile_timestamp: epoch seconds from a number or an ISO string.
std::optional<double> ProfileTimestamp(const Value& v, std::optional<int> offset) {
  if (v.IsBool()) return std::nullopt;
  if (v.IsNumber()) return std::isfinite(v.GetDouble()) ? std::optional<double>(v.GetDouble()) : std::nullopt;
  if (!v.IsString()) return std::nullopt;
  return ParseIsoTimestamp(v.GetString(), offset);
}

Result<rapidjson::Document> ReadJsonObject(const std::string& path) {
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  rapidjson::Document d;
  if (err || d.Parse<rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNanAndInfFlag>(text.c_str()).HasParseError() ||
      !d.IsObject()) {
    return Error{path};
  }
  return d;
}

// The window's counts from the kept records, or the reason they are unusable.
std::optional<std::pair<int64_t, int64_t>> TokenTotals(const AgenticRecords& r) {
  int64_t in = 0, out = 0;
  for (const Value& rec : r.kept.GetArray()) {
    const auto i = PyToInt(RecordMetric(rec, "input_sequence_length"));
    const auto o = PyToInt(RecordMetric(rec, "output_sequence_length"));
    if (!i || !o || *i < 0 || *o < 0) return std::nullopt;
    in += *i, out += *o;
  }
  if (in <= 0 || out <= 0) return std::nullopt;
  return std::make_pair(in, out);
}

AgenticPowerWindow Fail(const char* reason) { return AgenticPowerWindow{std::nullopt, {reason}}; }

std::string JoinPath(const std::string& dir, const char* name) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/" + name;
}

}  // namespace

bool IsNaiveIsoTimestamp(const std::string& s) {
  const std::optional<IsoTime> t = ParseIso(s);
  return t && !t->offset;
}

std::optional<double> ParseIsoTimestamp(const std::string& s, std::optional<int> offset_minutes) {
  const std::optional<IsoTime> t = ParseIso(s);
  if (!t) return std::nullopt;
  const std::optional<int> offset = t->offset ? t->offset : offset_minutes;
  if (!offset) return std::nullopt;
  const int64_t micros = t->days * 86400000000LL + t->micros - int64_t{*offset} * 60000000LL;
  return static_cast<double>(micros) / 1e6;  // timedelta.total_seconds(): one rounding
}

AgenticPowerWindow BuildAgenticPowerWindow(const std::string& result_dir) {
  const std::string artifacts = ResolveAgenticArtifactDir(result_dir);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(artifacts + "/profile_export_aiperf.json", ec) ||
      !std::filesystem::is_regular_file(artifacts + "/profile_export.jsonl", ec)) {
    return Fail("profile_artifacts_missing");
  }
  Result<rapidjson::Document> aggregate = ReadJsonObject(artifacts + "/profile_export_aiperf.json");
  Result<AgenticRecords> records = LoadAgenticRecords(artifacts + "/profile_export.jsonl");
  if (!aggregate || !records) return Fail("profile_artifacts_invalid");
  const Value& agg = aggregate.value();
  const auto start_it = agg.FindMember("start_time"), end_it = agg.FindMember("end_time");
  if (start_it == agg.MemberEnd() || end_it == agg.MemberEnd() || start_it->value.IsNull() || end_it->value.IsNull()) {
    return Fail("profile_window_missing");
  }
  std::optional<int> offset;
  const bool naive = (start_it->value.IsString() && IsNaiveIsoTimestamp(start_it->value.GetString())) ||
                     (end_it->value.IsString() && IsNaiveIsoTimestamp(end_it->value.GetString()));
  if (naive) {
    std::string reason;
    offset = CapturedOffset(result_dir, reason);
    if (!offset) return AgenticPowerWindow{std::nullopt, {reason}};
  }
  const std::optional<double> start = ProfileTimestamp(start_it->value, offset);
  const std::optional<double> end = ProfileTimestamp(end_it->value, offset);
  if (!start || !end || *end <= *start) return Fail("profile_window_invalid");
  const AgenticRecords& r = records.value();
  if (r.kept_count() <= 0) return Fail("successful_request_count_invalid");
  const auto tokens = TokenTotals(r);
  if (!tokens) return Fail("incomplete_token_accounting");
  rapidjson::Document w(rapidjson::kObjectType);
  auto& a = w.GetAllocator();
  w.AddMember("benchmark_start_time_unix", *start, a);
  w.AddMember("benchmark_end_time_unix", *end, a);
  w.AddMember("duration", *end - *start, a);
  w.AddMember("completed", r.kept_count(), a);
  w.AddMember("total_input_tokens", tokens->first, a);
  w.AddMember("total_output_tokens", tokens->second, a);
  return AgenticPowerWindow{std::move(w), {}};
}

std::vector<std::string> ApplyAgenticPower(const std::string& result_dir, rapidjson::Document& agg, int expected_gpus) {
  const std::string csv_path = JoinPath(result_dir, "gpu_metrics.csv");
  const std::string window_path = JoinPath(result_dir, "agentic_power_window.json");
  const std::string validation_path = JoinPath(result_dir, "power_validation.json");
  AgenticPowerWindow w = BuildAgenticPowerWindow(result_dir);
  if (w.window && !WriteFileAtomic(window_path, PyJsonDumps(*w.window))) w = Fail("power_window_unwritable");
  if (!w.window) {
    // _record_adapter_failure: the result and the audit file say power is invalid.
    PatchPowerResult(agg, false, {});
    PowerRun run;
    run.reasons = w.reasons;
    rapidjson::Document payload = PowerValidationPayload(run, expected_gpus, csv_path, window_path);
    payload.AddMember("window_source", "aiperf_profile_lifecycle", payload.GetAllocator());
    (void)WriteFileAtomic(validation_path, PyJsonDumps(payload));
    return w.reasons;
  }
  int err = 0;
  const std::string csv = ReadFileText(csv_path, &err);
  const PowerRun run = RunPower(err ? std::nullopt : std::optional<std::string>(csv), *w.window, agg, expected_gpus);
  (void)WriteFileAtomic(validation_path, PyJsonDumps(PowerValidationPayload(run, expected_gpus, csv_path, window_path)));
  return run.reasons;
}

}  // namespace ix
