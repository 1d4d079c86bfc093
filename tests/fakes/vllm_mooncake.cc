#include "vllm_mooncake.h"

#include <rapidjson/document.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fake_common.h"
#include "vllm_link.h"

namespace ixfake::vllm {

std::optional<long long> parse_segment_size(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  long long unit = 1;
  for (const auto& [suffix, mult] : {std::pair{"gb", 1LL << 30}, {"mb", 1LL << 20}, {"kb", 1LL << 10}, {"b", 1LL}}) {
    const std::string suf = suffix;
    if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
      s.resize(s.size() - suf.size());
      unit = mult;
      break;
    }
  }
  const auto n = parse_int(s, 1, (1LL << 62) / unit);
  if (!n) return std::nullopt;
  return *n * unit;
}

std::string parse_mooncake_config(const std::string& text, MooncakeStoreConfig& out) {
  rapidjson::Document d;
  if (d.Parse(text.c_str()).HasParseError() || !d.IsObject()) return "the Mooncake config is not a JSON object";
  MooncakeStoreConfig c;
  if (!d.HasMember("global_segment_size")) {
    c.segment_bytes = 128LL << 20;  // vLLM's DEFAULT_GLOBAL_SEGMENT_SIZE
  } else {
    const auto& v = d["global_segment_size"];
    std::optional<long long> n;
    if (v.IsString()) n = parse_segment_size(v.GetString());
    if (v.IsInt64() && v.GetInt64() > 0) n = v.GetInt64();
    if (!n) return "global_segment_size: invalid size (an integer, or a number with GB, MB, KB or B)";
    c.segment_bytes = *n;
  }
  if (!d.HasMember("master_server_address") || !d["master_server_address"].IsString()) {
    return "master_server_address is required (HOST:PORT of the mooncake_master)";
  }
  const std::string addr = d["master_server_address"].GetString();
  const size_t colon = addr.rfind(':');
  const auto port = colon == std::string::npos ? std::nullopt : parse_int(addr.substr(colon + 1), 1, 65535);
  if (!port || colon == 0) return "master_server_address: '" + addr + "' is not HOST:PORT";
  c.master_host = addr.substr(0, colon);
  c.master_port = static_cast<int>(*port);
  out = c;
  return {};
}

std::string join_mooncake_store(MooncakeStoreConfig& out, double timeout_s) {
  const char* path = std::getenv("MOONCAKE_CONFIG_PATH");
  if (path == nullptr || *path == '\0') return "ValueError: The environment variable 'MOONCAKE_CONFIG_PATH' is not set.";
  std::ifstream in(path);
  if (!in) return std::string("FileNotFoundError: MOONCAKE_CONFIG_PATH: cannot read ") + path;
  std::stringstream text;
  text << in.rdbuf();
  if (std::string err = parse_mooncake_config(text.str(), out); !err.empty()) return std::string(path) + ": " + err;
  std::string error;
  const int fd = connect_tcp(out.master_host, out.master_port, timeout_s, error);
  if (fd < 0) {
    return strprintf("RuntimeError: Mooncake store setup failed: cannot connect to the master at %s:%d: %s",
                     out.master_host.c_str(), out.master_port, error.c_str());
  }
  return {};  // fd stays open: the store's client holds its master connection
}

}  // namespace ixfake::vllm
