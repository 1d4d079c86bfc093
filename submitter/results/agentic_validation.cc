#include "submitter/results/agentic_validation.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/base/file_text.h"
#include "core/base/text.h"

namespace ix {
namespace {

namespace fs = std::filesystem;

// _resolve_aggregate_path.
std::string AggregatePath(const std::string& artifact_dir) {
  std::error_code ec;
  const fs::path direct = fs::path(artifact_dir) / "profile_export_aiperf.json";
  if (fs::is_regular_file(direct, ec)) return direct.string();
  std::vector<fs::path> children;
  for (const auto& e : fs::directory_iterator(artifact_dir, ec)) children.push_back(e.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& c : children) {
    if (fs::is_directory(c, ec) && fs::is_regular_file(c / "profile_export_aiperf.json", ec)) {
      return (c / "profile_export_aiperf.json").string();
    }
  }
  return direct.string();
}

// _metric_avg: nullopt for no metric or no avg; an Error with ValueError's
// text for one that is not usable.
Result<std::optional<double>> MetricAvg(const rapidjson::Value& agg, const char* name) {
  const auto m = agg.FindMember(name);
  if (m == agg.MemberEnd() || m->value.IsNull()) return std::optional<double>();
  if (!m->value.IsObject()) return Error{std::string(name) + " must be an object"};
  const auto v = m->value.FindMember("avg");
  if (v == m->value.MemberEnd() || v->value.IsNull()) return std::optional<double>();
  if (!v->value.IsNumber()) return Error{std::string(name) + ".avg must be numeric"};
  const double d = v->value.GetDouble();
  if (!std::isfinite(d) || d < 0) return Error{std::string(name) + ".avg must be a finite non-negative number"};
  return std::optional<double>(d);
}

struct Counts {
  std::optional<double> successes, errors, completed;
};

Result<Counts> ReadCounts(const rapidjson::Value& agg) {
  auto s = MetricAvg(agg, "request_count");
  if (!s) return s.error();
  auto e = MetricAvg(agg, "error_request_count");
  if (!e) return e.error();
  auto d = MetricAvg(agg, "completed_request_count");
  if (!d) return d.error();
  return Counts{s.value(), e.value(), d.value()};
}

}  // namespace

std::string PyFormatG(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::string PyFormatPercent3(double x) {
  if (std::isnan(x)) return "nan%";
  if (std::isinf(x)) return x > 0 ? "inf%" : "-inf%";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.3f%%", x * 100);
  return buf;
}

AgenticValidation ValidateAgenticResult(const std::string& artifact_dir, double threshold) {
  AgenticValidation out;
  const std::string path = AggregatePath(artifact_dir);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return out.errors = {path + " not found"}, out;
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err) return out.errors = {"failed to read " + path + ": " + std::strerror(err)}, out;
  rapidjson::Document agg;
  if (agg.Parse<rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNanAndInfFlag>(text.c_str()).HasParseError()) {
    // Python prints json's own message here; RapidJSON's says the same in other words.
    return out.errors = {"failed to read " + path + ": " + rapidjson::GetParseError_En(agg.GetParseError()) +
                         " (char " + std::to_string(agg.GetErrorOffset()) + ")"},
           out;
  }
  if (!agg.IsObject()) return out.errors = {path + " must contain a JSON object"}, out;
  Result<Counts> c = ReadCounts(agg);
  if (!c) return out.errors = {"failed to read " + path + ": " + c.error().message}, out;
  if (!c.value().successes) return out.errors = {"request_count.avg is missing"}, out;
  const double errors = c.value().errors.value_or(0.0);
  const double completed = c.value().completed.value_or(*c.value().successes + errors);
  if (completed <= 0) return out.errors = {"aiperf completed zero requests"}, out;
  const double rate = errors / completed;
  const std::string ratio = PyFormatG(errors) + "/" + PyFormatG(completed) + " = " + PyFormatPercent3(rate);
  if (rate > threshold) {
    out.errors = {"aiperf request error rate exceeded the benchmark limit: " + ratio + " > " + PyFormatPercent3(threshold)};
    return out;
  }
  out.message = "Validated aiperf request error rate: " + ratio + " <= " + PyFormatPercent3(threshold);
  return out;
}

Result<double> ParseFailedRequestThreshold(const std::string& text) {
  const std::string t(Trim(text, " \t\n\r\v\f"));
  char* end = nullptr;
  const double v = t.empty() ? 0 : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size()) {
    return Error{"argument --failed-request-threshold: invalid float value: '" + text + "'"};
  }
  if (!(v >= 0 && v <= 1)) return Error{"--failed-request-threshold must be between 0 and 1"};
  return v;
}

std::string ValidateRequiredServerMetrics(const std::string& result_dir, const std::string& prefix) {
  if (prefix.empty()) return "";
  const std::string dir = result_dir + "/aiperf_artifacts";
  const std::string json = dir + "/server_metrics_export.json", csv = dir + "/server_metrics_export.csv";
  std::error_code ec;
  auto non_empty = [&](const std::string& p) { return fs::is_regular_file(p, ec) && fs::file_size(p, ec) > 0; };
  if (!non_empty(json) || !non_empty(csv)) {
    return "required AIPerf server metrics artifacts are missing or empty in " + dir;
  }
  int err = 0;
  const std::string text = ReadFileText(json, &err);
  if (err || text.find("\"" + prefix) == std::string::npos) {
    return json + " contains no metric with required prefix '" + prefix + "'";
  }
  return "";
}

}  // namespace ix
