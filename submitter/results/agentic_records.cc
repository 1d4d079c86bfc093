#include "submitter/results/agentic_records.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "submitter/results/python_json.h"

namespace ix {
namespace {

namespace fs = std::filesystem;
using Alloc = rapidjson::Document::AllocatorType;
constexpr unsigned kParseFlags = rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNanAndInfFlag;

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// str.splitlines()[0] of a stripped message: the text up to the first line
// break Python recognises (ASCII ones; the rare Unicode separators are not
// expected in an HTTP error).
std::string FirstLine(const std::string& s) {
  const size_t end = s.find_first_of("\n\r\v\f\x1c\x1d\x1e");
  return s.substr(0, end);
}

// s[:120] for a str: 120 code points, not bytes.
std::string FirstCodePoints(const std::string& s, size_t n) {
  size_t i = 0, count = 0;
  while (i < s.size() && count < n) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++count;
  }
  return s.substr(0, i);
}

// _error_category: a name to count an error under.
std::string ErrorCategory(const rapidjson::Value& error) {
  const rapidjson::Value* message = &error;
  if (error.IsObject()) {
    for (const char* key : {"type", "error_type", "code", "class", "status"}) {
      auto it = error.FindMember(key);
      if (it == error.MemberEnd() || it->value.IsNull()) continue;
      if (it->value.IsString() && it->value.GetStringLength() == 0) continue;
      return PyStr(it->value);
    }
    auto m = error.FindMember("message");
    message = m != error.MemberEnd() && PyTruthy(m->value) ? &m->value : nullptr;
    if (message == nullptr) {
      auto e = error.FindMember("error");
      message = e != error.MemberEnd() ? &e->value : nullptr;
    }
  }
  if (message == nullptr || !PyTruthy(*message)) return "unknown";
  const std::string first = FirstLine(std::string(Trim(PyStr(*message), " \t\n\r\v\f")));
  const std::string head = first.substr(0, first.find(':'));
  return FirstCodePoints(head.empty() ? "unknown" : head, 120);
}

void CountError(AgenticRecords& r, const std::string& category) {
  ++r.error_dropped;
  for (auto& [name, count] : r.error_categories) {
    if (name == category) return void(++count);
  }
  r.error_categories.emplace_back(category, 1);
}

// One line's record: counted, then kept or dropped.
void Account(AgenticRecords& r, rapidjson::Document& line) {
  ++r.total;
  const rapidjson::Value* phase = RecordMetadata(line, "benchmark_phase");
  const bool warmup = phase != nullptr && !phase->IsNull() && !(phase->IsString() && phase->GetString() == std::string("profiling"));
  const rapidjson::Value& record = line;  // const iterators: one operator!= for clang's C++20 rules
  const auto err = record.IsObject() ? record.FindMember("error") : record.MemberEnd();
  const bool errored = record.IsObject() && err != record.MemberEnd() && PyTruthy(err->value);
  if (warmup) ++r.warmup_dropped;
  if (errored) CountError(r, ErrorCategory(err->value));
  if (warmup || errored) return;
  r.kept.PushBack(rapidjson::Value(line, r.kept.GetAllocator()), r.kept.GetAllocator());
}

}  // namespace

std::string ResolveAgenticArtifactDir(const std::string& result_dir) {
  const fs::path base = fs::path(result_dir) / "aiperf_artifacts";
  if (IsFile(base / "profile_export.jsonl")) return base.string();
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return base.string();
  std::vector<fs::path> children;
  for (const auto& e : fs::directory_iterator(base, ec)) children.push_back(e.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& c : children) {
    if (fs::is_directory(c, ec) && IsFile(c / "profile_export.jsonl")) return c.string();
  }
  return base.string();
}

Result<AgenticRecords> LoadAgenticRecords(const std::string& path) {
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err) return Error{path + ": " + std::strerror(err)};
  AgenticRecords r;
  size_t number = 0;
  for (std::string_view raw : Split(text, '\n')) {
    ++number;
    const std::string line(Trim(raw, " \t\r\n\v\f"));
    if (line.empty()) continue;
    rapidjson::Document d;
    if (d.Parse<kParseFlags>(line.c_str()).HasParseError()) {
      return Error{path + ":" + std::to_string(number) + ": not JSON"};
    }
    Account(r, d);
  }
  return r;
}

rapidjson::Value RequestAccounting(const AgenticRecords& r, Alloc& a) {
  rapidjson::Value out(rapidjson::kObjectType);
  out.AddMember("records_total", r.total, a);
  out.AddMember("records_profiled", r.kept_count(), a);
  out.AddMember("records_dropped_total", r.total - r.kept_count(), a);
  out.AddMember("records_warmup_dropped", r.warmup_dropped, a);
  out.AddMember("records_error_dropped", r.error_dropped, a);
  rapidjson::Value cats(rapidjson::kObjectType);
  for (const auto& [name, count] : r.error_categories) cats.AddMember(rapidjson::Value(name.c_str(), a), rapidjson::Value(count), a);
  out.AddMember("error_categories", cats, a);
  return out;
}

const rapidjson::Value* RecordMetric(const rapidjson::Value& record, const char* key) {
  if (!record.IsObject()) return nullptr;
  const auto m = record.FindMember("metrics");
  if (m == record.MemberEnd() || !m->value.IsObject()) return nullptr;
  const auto e = m->value.FindMember(key);
  if (e == m->value.MemberEnd()) return nullptr;
  if (!e->value.IsObject()) return &e->value;
  const auto v = e->value.FindMember("value");
  return v == e->value.MemberEnd() ? nullptr : &v->value;
}

const rapidjson::Value* RecordMetadata(const rapidjson::Value& record, const char* key) {
  if (!record.IsObject()) return nullptr;
  const auto m = record.FindMember("metadata");
  if (m == record.MemberEnd() || !m->value.IsObject()) return nullptr;
  const auto e = m->value.FindMember(key);
  return e == m->value.MemberEnd() ? nullptr : &e->value;
}

std::optional<double> PyToFloat(const rapidjson::Value* v) {
  if (v == nullptr || v->IsNull()) return std::nullopt;
  if (v->IsBool()) return v->GetBool() ? 1.0 : 0.0;
  if (v->IsNumber()) return v->GetDouble();
  if (!v->IsString()) return std::nullopt;
  const std::string s(Trim(v->GetString(), " \t\n\r\v\f"));
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

std::optional<int64_t> PyToInt(const rapidjson::Value* v) {
  if (v == nullptr || v->IsNull()) return std::nullopt;
  if (v->IsBool()) return v->GetBool() ? 1 : 0;
  if (v->IsInt64()) return v->GetInt64();
  if (v->IsNumber()) {
    const double d = v->GetDouble();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return std::nullopt;
    return static_cast<int64_t>(std::trunc(d));
  }
  if (!v->IsString()) return std::nullopt;
  int64_t out = 0;
  std::string s(Trim(v->GetString(), " \t\n\r\v\f"));
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  if (!ParseSigned(s, out)) return std::nullopt;
  return out;
}

bool PyTruthy(const rapidjson::Value& v) {
  if (v.IsNull()) return false;
  if (v.IsBool()) return v.GetBool();
  if (v.IsNumber()) return v.GetDouble() != 0.0;
  if (v.IsString()) return v.GetStringLength() > 0;
  if (v.IsObject()) return v.MemberCount() > 0;
  return v.Size() > 0;
}

std::string PyStr(const rapidjson::Value& v) {
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsBool()) return v.GetBool() ? "True" : "False";
  if (v.IsNull()) return "None";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsNumber()) return PyFloatRepr(v.GetDouble());
  return PyJsonDumps(v, 0);  // a container: JSON text, close to Python's repr
}

}  // namespace ix
