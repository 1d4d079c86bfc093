#include "spank_plugin/step_records.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>

#include "core/node/topology.h"

namespace ix {

std::string FailureJson(const std::string& process, pid_t pid, const std::string& reason,
                        const std::string& log_tail, const std::string& node, int64_t node_rank) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  w.StartObject();
  w.Key("process"); w.String(process.c_str());
  w.Key("pid"); w.Int(static_cast<int>(pid));
  w.Key("reason"); w.String(reason.c_str());
  w.Key("time"); w.String(when);
  w.Key("log_tail"); w.String(log_tail.c_str());
  if (node_rank >= 0) {
    w.Key("node"); w.String(node.c_str());
    w.Key("node_rank"); w.Int64(node_rank);
  }
  w.EndObject();
  return std::string(buf.GetString()) + "\n";
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
