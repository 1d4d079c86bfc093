// libFuzzer target for the event datagrams ix-stepd sends the node agent
// (core/process/event_sink.h EventJson): arbitrary bytes as the event name, step id,
// time and string fields, and raw values that are JSON by themselves. The
// output must always parse (RapidJSON; numbers read as their text) and give back
// every value, in order, exactly: the strings byte for byte, the time as
// the same double (null when it is not finite), each raw value as the same
// JSON; and it must be valid UTF-8 whenever every string given was. Anything
// else, and crashes, leaks, UB and hangs, are bugs.
#include <fuzzer/FuzzedDataProvider.h>
#include <rapidjson/document.h>
#include <rapidjson/encodings.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/process/event_sink.h"
#include "fuzz/fuzz_util.h"

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;
// Numbers are read as their text: the time is compared with strtod's exact
// reading of it (RapidJSON 1.1.0's own full-precision reader has UB of its
// own on some inputs: clz(0) in DiyFp::Normalize).
constexpr unsigned kAsText = rapidjson::kParseNumbersAsStringsFlag;

bool ValidUtf8(const std::string& s) {
  rapidjson::MemoryStream ms(s.data(), s.size());
  rapidjson::StringBuffer sink;
  while (ms.Tell() < s.size()) {
    if (!rapidjson::UTF8<>::Validate(ms, sink)) return false;
  }
  return true;
}

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

bool SameString(const rapidjson::Value& v, const std::string& s) {
  return v.IsString() && v.GetStringLength() == s.size() && std::memcmp(v.GetString(), s.data(), s.size()) == 0;
}

// A raw value is one the caller already holds as JSON: keep those that parse
// alone, as the compact JSON they are. RapidJSON stops at a NUL byte as at
// the end, so text with one is not JSON the caller could hold; and its sized
// Parse skips any of the UTF-8 BOM's bytes at the start, so the C string one.
bool RawJson(const std::string& text, std::string* compact) {
  if (text.find('\0') != std::string::npos) return false;
  rapidjson::Document d;
  d.Parse<kAsText>(text.c_str());
  if (d.HasParseError()) return false;
  *compact = Compact(d);
  return true;
}

void CheckMember(rapidjson::Value::ConstMemberIterator& it, const rapidjson::Value& doc, const std::string& key) {
  ixfuzz::Check(it != doc.MemberEnd(), "member '" + key + "' is missing");
  ixfuzz::Check(SameString(it->name, key), "a key came back changed: " + key);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string event = in.ConsumeRandomLengthString(64), step = in.ConsumeRandomLengthString(64);
  double time = 0;
  const uint64_t bits = in.ConsumeIntegral<uint64_t>();
  std::memcpy(&time, &bits, sizeof time);
  Pairs fields, raw;
  std::vector<std::string> raw_compact;
  bool utf8 = ValidUtf8(event) && ValidUtf8(step);
  for (int n = in.ConsumeIntegralInRange(0, 6); n > 0; --n) {
    fields.emplace_back(in.ConsumeRandomLengthString(32), in.ConsumeRandomLengthString(256));
    utf8 = utf8 && ValidUtf8(fields.back().first) && ValidUtf8(fields.back().second);
  }
  for (int n = in.ConsumeIntegralInRange(0, 3); n > 0; --n) {
    std::string key = in.ConsumeRandomLengthString(32), value = in.ConsumeRandomLengthString(256), compact;
    if (!RawJson(value, &compact)) continue;
    utf8 = utf8 && ValidUtf8(key) && ValidUtf8(value);
    raw.emplace_back(std::move(key), std::move(value));
    raw_compact.push_back(std::move(compact));
  }
  const std::string json = ix::EventJson(event, step, time, fields, raw);
  rapidjson::Document d;
  d.Parse<kAsText>(json.data(), json.size());
  if (d.HasParseError() || !d.IsObject()) ixfuzz::Fail("an event that is not a JSON object: " + json);
  if (utf8) {
    rapidjson::Document strict;
    strict.Parse<rapidjson::kParseValidateEncodingFlag>(json.data(), json.size());
    ixfuzz::Check(!strict.HasParseError(), "an event from UTF-8 strings is not UTF-8: " + json);
  }
  const rapidjson::Value& doc = d;
  rapidjson::Value::ConstMemberIterator it = doc.MemberBegin();
  CheckMember(it, doc, "event");
  ixfuzz::Check(SameString(it->value, event), "the event name came back changed");
  ++it;
  CheckMember(it, doc, "step");
  ixfuzz::Check(SameString(it->value, step), "the step came back changed");
  ++it;
  CheckMember(it, doc, "time");
  if (std::isfinite(time)) {
    // A number (not a string) that reads back as the same double.
    ixfuzz::Check(it->value.IsString() && json.find(std::string("\"time\":") + it->value.GetString()) != std::string::npos &&
                      std::strtod(it->value.GetString(), nullptr) == time,
                  "the time came back changed: " + json);
  } else {
    ixfuzz::Check(it->value.IsNull(), "a time that is not finite is not null: " + json);
  }
  ++it;
  for (const auto& [k, v] : fields) {
    CheckMember(it, doc, k);
    ixfuzz::Check(SameString(it->value, v), "field '" + k + "' came back changed");
    ++it;
  }
  for (size_t i = 0; i < raw.size(); ++i, ++it) {
    CheckMember(it, doc, raw[i].first);
    ixfuzz::Check(Compact(it->value) == raw_compact[i], "raw value '" + raw[i].first + "' came back changed");
  }
  ixfuzz::Check(it == doc.MemberEnd(), "an event with members nobody gave");
  return 0;
}
