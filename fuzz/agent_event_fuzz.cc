// libFuzzer target for what the node agent does with each datagram on its
// event socket (node_agent/event_socket.h StampEvent): arbitrary bytes as
// the datagram, a job user's sender and a node name. An error is expected
// (it must start with "event: "); crashes, leaks, UB and hangs are bugs,
// and so is a stamped event that: does not parse (strictly: UTF-8 checked)
// as a JSON object; lacks the kernel's sender or the node, or has either
// twice; is over kMaxEventBytes; breaks the protocol's rules for a stamped
// event (core/events/event_rules.h); is not stored byte for byte by the
// collector (ParseEventBatch of a batch of it); or changes when it is
// stamped again with the same sender and node.
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/event_check.h"
#include "fuzz/fuzz_util.h"
#include "node_agent/event_socket.h"
#include "submitter/collector/event_validation.h"

namespace {

constexpr pid_t kPid = 4242;
constexpr uid_t kUid = 1001;
constexpr gid_t kGid = 1002;
const std::string kNode = "gpu-node-7";

// How many top-level members are named `key`.
int Count(const rapidjson::Value& doc, const char* key) {
  int n = 0;
  for (const auto& m : doc.GetObject()) n += std::string_view(m.name.GetString(), m.name.GetStringLength()) == key;
  return n;
}

void CheckSenderAndNode(const rapidjson::Document& doc, const std::string& out) {
  ixfuzz::Check(Count(doc, "sender") == 1 && Count(doc, "node") == 1, "sender or node not exactly once: " + out);
  const rapidjson::Value& sender = doc["sender"];
  ixfuzz::Check(sender.IsObject() && sender.MemberCount() == 3 && sender.HasMember("pid") &&
                    sender["pid"].IsInt64() && sender["pid"].GetInt64() == kPid && sender.HasMember("uid") &&
                    sender["uid"].IsUint64() && sender["uid"].GetUint64() == kUid && sender.HasMember("gid") &&
                    sender["gid"].IsUint64() && sender["gid"].GetUint64() == kGid,
                "not the kernel's sender: " + out);
  const rapidjson::Value& node = doc["node"];
  ixfuzz::Check(node.IsString() && std::string(node.GetString(), node.GetStringLength()) == kNode,
                "not the agent's node: " + out);
}

// The collector takes the stamped event as it is.
void CheckCollectorStores(const std::string& out) {
  ixfuzz::CheckStampedEvent(out, "a stamped event");
  ix::Result<std::vector<ix::ValidEvent>> batch = ix::ParseEventBatch("[" + out + "]");
  ixfuzz::Check(batch.ok(), "the collector refuses a stamped event: " + (batch ? "" : batch.error().message));
  ixfuzz::Check(batch.value().size() == 1 && batch.value()[0].body == out,
                "the collector stores another body than the agent sent: " + out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view datagram = ixfuzz::AsText(data, size);
  ix::Result<std::string> stamped = ix::StampEvent(datagram, kPid, kUid, kGid, kNode);
  if (!stamped) {
    ixfuzz::Check(stamped.error().message.rfind("event: ", 0) == 0, "an error that does not say 'event: ': " +
                                                                        stamped.error().message);
    return 0;
  }
  const std::string& out = stamped.value();
  rapidjson::Document doc;  // numbers as values here, to read the sender's ids
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(out.data(), out.size());
  ixfuzz::Check(!doc.HasParseError() && doc.IsObject(), "a stamped event that is not a JSON object: " + out);
  CheckSenderAndNode(doc, out);
  CheckCollectorStores(out);
  ix::Result<std::string> again = ix::StampEvent(out, kPid, kUid, kGid, kNode);
  ixfuzz::Check(again.ok(), "stamping a stamped event fails: " + (again ? "" : again.error().message));
  ixfuzz::Check(again.value() == out, "stamping again changes the event:\n" + out + "\n" + again.value());
  return 0;
}
