#include "submitter/sweep/sweep_inbox.h"

#include <rapidjson/document.h>

#include <utility>

namespace ix {
namespace {

// A string member of `o`, "" when absent; false when present but not a string.
bool StringField(const rapidjson::Value& o, const char* key, std::string& out) {
  auto it = o.FindMember(key);
  if (it == o.MemberEnd()) return true;
  if (!it->value.IsString()) return false;
  out.assign(it->value.GetString(), it->value.GetStringLength());
  return true;
}

// {"state":..., "exit_code":N, "reason":..., "process":...}: the task's word.
bool ReadEntryWord(const rapidjson::Value& d, StreamItem& item) {
  if (!StringField(d, "state", item.state) || !StringField(d, "reason", item.reason) ||
      !StringField(d, "process", item.process)) {
    return false;
  }
  if (item.state != "running" && item.state != "succeeded" && item.state != "failed") return false;
  auto code = d.FindMember("exit_code");
  if (code != d.MemberEnd()) {
    if (!code->value.IsInt64()) return false;
    item.exit_code = code->value.GetInt64();
  }
  return true;
}

// {"failure":{"reason":..., "process":...}}: ix-stepd's failure.json.
bool ReadFailure(const rapidjson::Value& d, StreamItem& item) {
  auto f = d.FindMember("failure");
  if (f == d.MemberEnd() || !f->value.IsObject()) return false;
  return StringField(f->value, "reason", item.reason) && StringField(f->value, "process", item.process);
}

}  // namespace

void SweepInbox::Push(StreamItem item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(std::move(item));
  }
  cv_.notify_all();
}

std::vector<StreamItem> SweepInbox::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StreamItem> out;
  out.swap(items_);
  return out;
}

bool SweepInbox::WaitFor(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [this] { return !items_.empty(); });
}

std::optional<StreamItem> StreamItemOfEvent(const std::string& event, const std::optional<std::string>& sweep,
                                            const std::optional<int64_t>& entry, double time,
                                            const std::string& body, const std::string& sweep_id) {
  if (!sweep || *sweep != sweep_id || !entry || *entry < 0) return std::nullopt;
  if (event != "entry" && event != "failure" && event != "result") return std::nullopt;
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return std::nullopt;
  StreamItem item;
  item.entry = *entry;
  item.time = time;
  bool ok = false;
  if (event == "entry") {
    item.kind = StreamItem::Kind::kEntry;
    ok = ReadEntryWord(d, item);
  } else if (event == "failure") {
    item.kind = StreamItem::Kind::kFailure;
    ok = ReadFailure(d, item);
  } else {
    item.kind = StreamItem::Kind::kResultNamed;
    ok = StringField(d, "name", item.name) && !item.name.empty();
  }
  if (!ok) return std::nullopt;
  return item;
}

}  // namespace ix
