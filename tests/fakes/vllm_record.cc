#include "vllm_record.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <map>

#include <unistd.h>

#include "fake_common.h"
#include "vllm_engine_cores.h"

extern char** environ;

namespace ixfake::vllm {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void write_env(JsonWriter& w) {
  std::map<std::string, std::string> envmap;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    std::size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    envmap.emplace(kv.substr(0, eq), kv.substr(eq + 1));  // first one wins, like getenv
  }
  w.Key("env");
  w.StartObject();
  for (const auto& [k, v] : envmap) {
    w.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  }
  w.EndObject();
}

void write_engine_cores(JsonWriter& w) {
  w.Key("engine_cores");
  w.StartArray();
  for (const auto& c : engine_cores()) {
    w.StartObject();
    w.Key("rank");
    w.Int(c.rank);
    w.Key("pid");
    w.Int(static_cast<int>(c.pid));
    w.Key("comm");
    w.String(("EngineCore_DP" + std::to_string(c.rank)).c_str());
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string record_json(const std::vector<std::string>& argv) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("argv");
  w.StartArray();
  for (const auto& a : argv) w.String(a.c_str(), static_cast<rapidjson::SizeType>(a.size()));
  w.EndArray();
  write_env(w);
  w.Key("pid");
  w.Int(static_cast<int>(::getpid()));
  write_engine_cores(w);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

std::string write_record(const std::string& dir, const std::vector<std::string>& argv) {
  std::string path = dir + "/vllm-" + std::to_string(::getpid()) + ".json";
  if (std::string err = write_file_atomic(path, record_json(argv)); !err.empty()) {
    std::fprintf(stderr, "vllm (fake): cannot write the argv record: %s\n", err.c_str());
    shutdown_and_exit(1, "cannot write the argv record " + err);
  }
  return path;
}

}  // namespace ixfake::vllm
