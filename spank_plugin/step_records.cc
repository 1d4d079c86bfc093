#include "spank_plugin/step_records.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <ctime>
#include <thread>

#include "core/base/file_text.h"
#include "core/node/topology.h"

namespace ix {

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// The fields of one record, in the order failure.json has always had them.
void WriteFields(Writer& w, const FailureRecord& f) {
  char when[32];
  const std::time_t secs = static_cast<std::time_t>(f.unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  w.Key("process"); w.String(f.process.c_str());
  w.Key("pid"); w.Int(static_cast<int>(f.pid));
  w.Key("reason"); w.String(f.reason.c_str());
  w.Key("time"); w.String(when);
  w.Key("time_unix_ms"); w.Int64(f.unix_ms);
  w.Key("log_tail"); w.String(f.log_tail.c_str());
  if (f.node_rank >= 0) {
    w.Key("node"); w.String(f.node.c_str());
    w.Key("node_rank"); w.Int64(f.node_rank);
  }
  if (!f.cause.empty()) {
    w.Key("cause"); w.String(f.cause.c_str());
  }
  if (!f.hang_json.empty()) {
    w.Key("hang"); w.RawValue(f.hang_json.c_str(), f.hang_json.size(), rapidjson::kObjectType);
  }
  if (!f.diagnosis.empty()) {
    w.Key("diagnosis");
    w.StartArray();
    for (const std::string& d : f.diagnosis) w.String(d.c_str());
    w.EndArray();
  }
}

std::string Text(const rapidjson::StringBuffer& buf) { return std::string(buf.GetString()) + "\n"; }

}  // namespace

std::string FailureJson(const FailureRecord& f) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  WriteFields(w, f);
  w.EndObject();
  return Text(buf);
}

std::string FailureJsonAfter(const FailureRecord& first, const FailureRecord& head) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  WriteFields(w, first);
  w.Key("seen_on_head");
  w.StartObject();
  WriteFields(w, head);
  w.EndObject();
  w.EndObject();
  return Text(buf);
}

Result<FailureRecord> ParseFailureJson(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError() || !d.IsObject()) return Error{"not a JSON object"};
  // Const iterators: clang's C++20 rules find RapidJSON's non-const ones
  // ambiguous to compare.
  const rapidjson::Value& obj = d;
  const auto str = [&](const char* k) -> const rapidjson::Value* {
    auto it = obj.FindMember(k);
    return it != obj.MemberEnd() && it->value.IsString() ? &it->value : nullptr;
  };
  const auto num = [&](const char* k) -> const rapidjson::Value* {
    auto it = obj.FindMember(k);
    return it != obj.MemberEnd() && it->value.IsInt64() ? &it->value : nullptr;
  };
  FailureRecord f;
  if (!str("process") || !str("reason") || !num("time_unix_ms")) {
    return Error{"needs \"process\" and \"reason\" (strings) and \"time_unix_ms\" (an integer)"};
  }
  f.process = str("process")->GetString();
  f.reason = str("reason")->GetString();
  f.unix_ms = num("time_unix_ms")->GetInt64();
  if (num("pid")) f.pid = static_cast<pid_t>(num("pid")->GetInt64());
  if (str("log_tail")) f.log_tail = str("log_tail")->GetString();
  if (str("cause")) f.cause = str("cause")->GetString();
  if (str("node") && num("node_rank")) {
    f.node = str("node")->GetString();
    f.node_rank = num("node_rank")->GetInt64();
  }
  return f;
}

std::optional<FailureRecord> EarliestNodeFailure(int result_dir_fd, int64_t nodes, int64_t since_ms, int64_t by_ms) {
  std::optional<FailureRecord> first;
  for (int64_t k = 1; k < nodes && result_dir_fd >= 0; ++k) {
    const std::string sub = "node" + std::to_string(k);
    const int dir = ::openat(result_dir_fd, sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) continue;
    int err = 0;
    const std::string text = ReadFileTextAt(dir, "failure.json", &err);
    ::close(dir);
    if (err != 0) continue;
    Result<FailureRecord> f = ParseFailureJson(text);
    if (!f || f.value().unix_ms < since_ms || f.value().unix_ms > by_ms) continue;
    if (!first || f.value().unix_ms < first->unix_ms) first = std::move(f.value());
  }
  return first;
}

std::optional<FailureRecord> AwaitNodeFailure(int result_dir_fd, int64_t nodes, int64_t since_ms, int64_t by_ms,
                                              std::chrono::milliseconds wait) {
  const auto end = std::chrono::steady_clock::now() + wait;
  for (;;) {
    std::optional<FailureRecord> f = EarliestNodeFailure(result_dir_fd, nodes, since_ms, by_ms);
    if (f || std::chrono::steady_clock::now() >= end) return f;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int64_t UnixMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ObtainedJson(const std::vector<std::pair<std::string, Result<ProcBinding>>>& got) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  for (const auto& [name, b] : got) {
    w.Key(name.c_str());
    w.StartObject();
    if (b) {
      w.Key("cpus"); w.String(FormatIdList(b.value().cpus).c_str());
      w.Key("mems_allowed"); w.String(FormatIdList(b.value().mems_allowed).c_str());
      w.Key("mempolicy"); w.String(b.value().mempolicy.c_str());
      w.Key("summary"); w.String(DescribeBinding(b.value()).c_str());
    } else {
      w.Key("error"); w.String(b.error().message.c_str());
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ix
