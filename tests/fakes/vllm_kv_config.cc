#include "vllm_kv_config.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstring>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// The fields of vLLM's KVTransferConfig: it is a pydantic dataclass, so any
// other key stops the engine.
constexpr const char* kTransferFields[] = {
    "kv_connector", "engine_id", "kv_buffer_device", "kv_buffer_size", "kv_role", "kv_rank", "kv_parallel_size",
    "kv_ip", "kv_port", "kv_connector_extra_config", "kv_connector_module_path", "enable_permute_local_kv",
    "kv_load_failure_policy"};

// The connectors vLLM's KVConnectorFactory registers; the fake emulates a
// tier for the offload and Mooncake store ones and accepts the others as
// they are (P/D transfer, LMCache: nothing to emulate here).
constexpr const char* kKnownConnectors[] = {
    "ExampleConnector", "SharedStorageConnector", "P2pNcclConnector", "LMCacheConnectorV1", "LMCacheMPConnector",
    "NixlConnector", "MultiConnector", "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector",
    "MooncakeConnector", "SimpleCPUOffloadConnector", "MooncakeStoreConnector", "MooncakeConnectorStoreV1",
    "FlexKVConnectorV1"};

constexpr const char* kRoles = "('kv_producer', 'kv_consumer', 'kv_both')";

bool known(const std::string& name) {
  return std::any_of(std::begin(kKnownConnectors), std::end(kKnownConnectors),
                     [&](const char* k) { return name == k; });
}

bool is_mooncake_store(const std::string& name) {
  return name.find("Mooncake") != std::string::npos && name.find("Store") != std::string::npos;
}

bool is_cpu_offload(const std::string& name) {
  return name == "SimpleCPUOffloadConnector" || name == "OffloadingConnector";
}

// A positive byte count from extra_config[key]; nullopt when absent, an
// error when not a positive number.
std::optional<long long> bytes_field(const rapidjson::Value& extra, const char* key, std::string& error) {
  if (!extra.IsObject() || !extra.HasMember(key)) return std::nullopt;
  const auto& v = extra[key];
  double d = v.IsNumber() ? v.GetDouble() : -1;
  if (v.IsString()) {
    if (auto n = parse_int(v.GetString(), 1, 1LL << 60)) d = static_cast<double>(*n);
  }
  if (!(d >= 1)) {
    error = strprintf("kv_connector_extra_config.%s must be a positive number of bytes", key);
    return std::nullopt;
  }
  return static_cast<long long>(d);
}

// Blocks of `bytes` at bytes_per_block; an error below one block.
long long tier_blocks(long long bytes, const KvCacheConfig& cfg, const char* what, std::string& error) {
  const long long blocks = bytes / cfg.bytes_per_block;
  if (blocks < 1) {
    error = strprintf("%s=%lld is less than one KV block (%lld bytes: %lld per token x block size %d)", what, bytes,
                      cfg.bytes_per_block, kKvBytesPerToken, cfg.block_size);
  }
  return blocks;
}

// One connector object (the whole config, or one of a MultiConnector's
// `connectors`): checks it as vLLM does and records its tier, if any and
// none yet.
std::string read_connector(const rapidjson::Value& c, const KvFlags& flags, KvCacheConfig& cfg) {
  if (!c.IsObject()) return "KVTransferConfig must be a JSON object";
  for (auto it = c.MemberBegin(); it != c.MemberEnd(); ++it) {
    const char* key = it->name.GetString();
    if (std::none_of(std::begin(kTransferFields), std::end(kTransferFields),
                     [&](const char* f) { return std::strcmp(f, key) == 0; })) {
      return strprintf("1 validation error for KVTransferConfig\n%s\n  Unexpected keyword argument", key);
    }
  }
  if (!c.HasMember("kv_connector") || c["kv_connector"].IsNull()) return {};
  if (!c["kv_connector"].IsString()) return "KVTransferConfig.kv_connector must be a string";
  const std::string name = c["kv_connector"].GetString();
  if (!c.HasMember("kv_role") || !c["kv_role"].IsString()) {
    return std::string("Please specify kv_role when kv_connector is set, supported roles are ") + kRoles;
  }
  const std::string role = c["kv_role"].GetString();
  if (role != "kv_producer" && role != "kv_consumer" && role != "kv_both") {
    return "Unsupported kv_role: " + role + ". Supported roles are " + kRoles;
  }
  if (!known(name) && !c.HasMember("kv_connector_module_path")) return "Unsupported connector type: " + name;
  static const rapidjson::Value kNoExtra(rapidjson::kObjectType);
  const rapidjson::Value& extra = c.HasMember("kv_connector_extra_config") ? c["kv_connector_extra_config"] : kNoExtra;
  std::string error;
  if (name == "MultiConnector") {
    if (!extra.IsObject() || !extra.HasMember("connectors") || !extra["connectors"].IsArray()) {
      return "MultiConnector needs kv_connector_extra_config.connectors, a list of KVTransferConfig";
    }
    for (const auto& sub : extra["connectors"].GetArray()) {
      if (error = read_connector(sub, flags, cfg); !error.empty()) return error;
    }
    return {};
  }
  if (cfg.tier != TierKind::kNone) return {};  // the first tier of a MultiConnector serves
  if (is_cpu_offload(name)) {
    // Per rank: vLLM sizes the tier per engine (all its TP x PP workers);
    // `_per_rank`, when a recipe gives it, is taken as this rank's share.
    auto bytes = bytes_field(extra, "cpu_bytes_to_use_per_rank", error);
    if (!bytes && error.empty()) bytes = bytes_field(extra, "cpu_bytes_to_use", error);
    if (!error.empty()) return error;
    if (!bytes) return name + ": kv_connector_extra_config.cpu_bytes_to_use is required";
    cfg.cpu_blocks = tier_blocks(*bytes, cfg, "cpu_bytes_to_use", error);
    cfg.tier = TierKind::kCpuOffload;
  } else if (is_mooncake_store(name)) {
    cfg.cpu_blocks = tier_blocks(flags.env_mooncake_bytes.value_or(kDefaultMooncakeBytes), cfg,
                                 "FAKE_VLLM_MOONCAKE_BYTES", error);
    cfg.tier = TierKind::kMooncakeStore;
  } else {
    return {};
  }
  cfg.connector = name;
  return error;
}

}  // namespace

std::string make_kv_config(const KvFlags& flags, KvCacheConfig& out) {
  KvCacheConfig cfg;
  cfg.block_size = flags.block_size.value_or(kDefaultBlockSize);
  cfg.bytes_per_block = kKvBytesPerToken * cfg.block_size;
  if (flags.gpu_blocks) {
    cfg.gpu_blocks = *flags.gpu_blocks;
  } else if (flags.env_gpu_blocks) {
    cfg.gpu_blocks = *flags.env_gpu_blocks;
  }
  cfg.prefix_caching = !flags.no_prefix_caching;
  cfg.prompt_tokens_details = flags.prompt_tokens_details;
  if (flags.kv_transfer) {
    rapidjson::Document d;
    d.Parse(flags.kv_transfer->c_str());
    if (d.HasParseError()) return "argument --kv-transfer-config: invalid loads value: " + *flags.kv_transfer;
    if (std::string error = read_connector(d, flags, cfg); !error.empty()) return error;
  }
  out = cfg;
  return {};
}

std::string with_thousands(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace ixfake::vllm
