#include "core/matrix/matrix_config.h"

#include "core/yaml/yaml_check.h"

namespace ix {

const char* ScenarioTypeName(ScenarioType t) {
  return t == ScenarioType::kFixedSeqLen ? "fixed-seq-len" : "agentic-coding";
}

std::string ConfigEntry::Where() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const ConfigEntry* MasterConfig::Find(const std::string& key) const {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &entries[it->second];
}

namespace {

// MasterLoader: validates one parsed file and appends its entries; throws
// YamlCheckError with the located message.
class MasterLoader {
 public:
  MasterLoader(const YamlDoc& doc, MasterConfig& into) : doc_(doc), c_(doc), into_(into) {}

  void Load() {
    const uint32_t root = doc_.root();
    const YNode& r = doc_.node(root);
    if (r.type == YType::kNull) {
      throw YamlCheckError(doc_.name() + ": file is empty, expected a mapping of config keys");
    }
    if (r.type != YType::kMap) {
      c_.Fail(root, "", "a master config must be a mapping of config keys to configs, got " + DescribeYaml(r));
    }
    for (size_t k = 0; k < r.items.size(); k += 2) {
      const uint32_t key_node = r.items[k];
      const YNode& kn = doc_.node(key_node);
      if (kn.type != YType::kString) {
        c_.Fail(key_node, "", "config keys must be strings, got " + DescribeYaml(kn));
      }
      const std::string& key = kn.text;
      for (char w : std::string_view("*?[]")) {
        if (key.find(w) != std::string::npos) {
          c_.Fail(key_node, "",
                  "config key '" + key + "' contains the wildcard character '" + std::string(1, w) +
                      "'; config keys must be literal because --config-keys treats *, ? and [...] as "
                      "patterns");
        }
      }
      if (const ConfigEntry* prev = into_.Find(key)) {
        c_.Fail(key_node, "", "config key '" + key + "' is defined twice: first at " + prev->Where() +
                                  " (duplicate keys across config files are not allowed)");
      }
      c_.set_key(key);
      ConfigEntry e = LoadEntry(r.items[k + 1]);
      e.key = key;
      e.file = doc_.name();
      e.line = kn.line;
      e.column = kn.column;
      c_.set_key("");
      into_.index.emplace(key, into_.entries.size());
      into_.entries.push_back(std::move(e));
    }
  }

 private:
  const YNode& N(uint32_t id) const { return doc_.node(id); }

  std::string OptStr(uint32_t map, const char* key, const std::string& path, const char* def) {
    const uint32_t v = c_.Optional(map, key);
    return v == YamlDoc::kNoNode ? def : c_.Str(v, FieldPath(path, key));
  }

  NamedVersion LoadNamed(uint32_t id, const std::string& path) {
    c_.CheckKeys(id, path, {"name", "version"});
    NamedVersion nv;
    nv.name = c_.Str(c_.Required(id, path, "name"), FieldPath(path, "name"));
    const uint32_t v = c_.Optional(id, "version");
    if (v != YamlDoc::kNoNode) {
      nv.version = c_.Str(v, FieldPath(path, "version"));
      nv.version_first = N(N(id).items[0]).text == "version";
    }
    return nv;
  }

  ConfigEntry LoadEntry(uint32_t map) {
    c_.CheckKeys(map, "", {"image", "model", "model-prefix", "runner", "precision", "framework", "multinode",
                           "disagg", "router", "kv-p2p-transfer", "scenarios"});
    ConfigEntry e;
    e.image = c_.Str(c_.Required(map, "", "image"), "image");
    e.model = c_.Str(c_.Required(map, "", "model"), "model");
    e.model_prefix = c_.Str(c_.Required(map, "", "model-prefix"), "model-prefix");
    const uint32_t runner = c_.Required(map, "", "runner");
    e.runner = c_.Str(runner, "runner");
    e.runner_line = N(runner).line;
    e.runner_column = N(runner).column;
    e.precision = c_.Str(c_.Required(map, "", "precision"), "precision");
    e.framework = c_.Str(c_.Required(map, "", "framework"), "framework");
    e.multinode = c_.Bool(c_.Required(map, "", "multinode"), "multinode");
    if (const uint32_t d = c_.Optional(map, "disagg"); d != YamlDoc::kNoNode) e.disagg = c_.Bool(d, "disagg");
    if (const uint32_t r = c_.Optional(map, "router"); r != YamlDoc::kNoNode) {
      if (!e.multinode) {
        c_.Fail(r, "router",
                "router scope: a config-level router applies to multinode configs only (multinode: false "
                "here); single-node search-space entries name their own router");
      }
      e.router = LoadNamed(r, "router");
      router_node_ = r;
    }
    if (const uint32_t t = c_.Optional(map, "kv-p2p-transfer"); t != YamlDoc::kNoNode) {
      if (!e.multinode) {
        c_.Fail(t, "kv-p2p-transfer", "kv-p2p-transfer is only for multinode configs (multinode: false here)");
      }
      e.kv_p2p_transfer = c_.Str(t, "kv-p2p-transfer");
    }
    const uint32_t scenarios = c_.Required(map, "", "scenarios");
    c_.CheckKeys(scenarios, "scenarios", {"fixed-seq-len", "agentic-coding"});
    const YNode& sm = N(scenarios);
    for (size_t k = 0; k < sm.items.size(); k += 2) {
      Scenario s;
      s.type = N(sm.items[k]).text == "fixed-seq-len" ? ScenarioType::kFixedSeqLen : ScenarioType::kAgenticCoding;
      const std::string path = FieldPath("scenarios", ScenarioTypeName(s.type));
      if (s.type == ScenarioType::kAgenticCoding && e.runner.rfind("cluster:", 0) != 0) {
        c_.Fail(runner, "runner",
                "agentic-coding scenarios run only on cluster runners: runner '" + e.runner +
                    "' must start with 'cluster:'");
      }
      const uint32_t rows = sm.items[k + 1];
      c_.RequireSeq(rows, path);
      const YNode& rn = N(rows);
      for (size_t i = 0; i < rn.items.size(); ++i) {
        s.rows.push_back(LoadRow(e, s.type, rn.items[i], FieldIndex(path, i)));
      }
      e.scenarios.push_back(std::move(s));
    }
    router_node_ = YamlDoc::kNoNode;
    return e;
  }

  ScenarioRow LoadRow(const ConfigEntry& e, ScenarioType type, uint32_t map, const std::string& path) {
    ScenarioRow row;
    if (type == ScenarioType::kFixedSeqLen) {
      c_.CheckKeys(map, path, {"isl", "osl", "search-space"});
      row.isl = c_.Positive(c_.Required(map, path, "isl"), FieldPath(path, "isl"));
      row.osl = c_.Positive(c_.Required(map, path, "osl"), FieldPath(path, "osl"));
    } else {
      c_.CheckKeys(map, path, {"dram-utilization", "duration", "search-space"});
      if (const uint32_t u = c_.Optional(map, "dram-utilization"); u != YamlDoc::kNoNode) {
        const double v = c_.Number(u, FieldPath(path, "dram-utilization"));
        if (!(v > 0 && v <= 1)) {
          c_.Fail(u, FieldPath(path, "dram-utilization"),
                  "dram-utilization is a fraction of host DRAM and must be in (0, 1], got " + N(u).text);
        }
        row.dram_utilization = v;
      }
      if (const uint32_t d = c_.Optional(map, "duration"); d != YamlDoc::kNoNode) {
        row.duration = c_.Positive(d, FieldPath(path, "duration"));
      }
    }
    const std::string ss_path = FieldPath(path, "search-space");
    const uint32_t ss = c_.Required(map, path, "search-space");
    c_.RequireSeq(ss, ss_path);
    const YNode& sn = N(ss);
    row.search_space.reserve(sn.items.size());
    for (size_t i = 0; i < sn.items.size(); ++i) {
      row.search_space.push_back(LoadSearchSpace(e, type, row, sn.items[i], FieldIndex(ss_path, i)));
    }
    return row;
  }

  void CheckDcp(uint32_t at, const std::string& path, int64_t tp, int64_t dcp) {
    if (tp % dcp != 0) {
      c_.Fail(at, path, "tp (" + std::to_string(tp) + ") must be divisible by dcp-size (" + std::to_string(dcp) + ")");
    }
  }

  WorkerSpec LoadWorker(uint32_t map, const std::string& path) {
    c_.CheckKeys(map, path, {"num-worker", "tp", "ep", "dp-attn", "additional-settings", "pp", "dcp-size", "pcp-size"});
    WorkerSpec w;
    w.num_worker = c_.NonNegative(c_.Required(map, path, "num-worker"), FieldPath(path, "num-worker"));
    w.tp = c_.Positive(c_.Required(map, path, "tp"), FieldPath(path, "tp"));
    w.ep = c_.Positive(c_.Required(map, path, "ep"), FieldPath(path, "ep"));
    w.dp_attn = c_.Bool(c_.Required(map, path, "dp-attn"), FieldPath(path, "dp-attn"));
    const YNode& m = N(map);
    for (size_t k = 0; k < m.items.size(); k += 2) {
      const std::string& key = N(m.items[k]).text;
      const uint32_t v = m.items[k + 1];
      const std::string f = FieldPath(path, key);
      using F = WorkerSpec::Field;
      if (key == "num-worker") {
        w.order.push_back(F::kNumWorker);
      } else if (key == "tp") {
        w.order.push_back(F::kTp);
      } else if (key == "ep") {
        w.order.push_back(F::kEp);
      } else if (key == "dp-attn") {
        w.order.push_back(F::kDpAttn);
      } else if (key == "additional-settings") {
        c_.RequireSeq(v, f);
        const YNode& list = N(v);
        for (size_t i = 0; i < list.items.size(); ++i) w.additional_settings.push_back(c_.Str(list.items[i], FieldIndex(f, i)));
        w.order.push_back(F::kAdditionalSettings);
      } else if (key == "pp") {
        w.pp = c_.Positive(v, f);
        w.order.push_back(F::kPp);
      } else if (key == "dcp-size") {
        w.dcp_size = c_.Positive(v, f);
        w.order.push_back(F::kDcpSize);
      } else {
        w.pcp_size = c_.Positive(v, f);
        w.order.push_back(F::kPcpSize);
      }
    }
    CheckDcp(map, path, w.tp, w.dcp_size);
    return w;
  }

  SearchSpaceEntry LoadSearchSpace(const ConfigEntry& e, ScenarioType type, const ScenarioRow& row, uint32_t map,
                                   const std::string& path) {
    c_.RequireMap(map, path);
    const bool agentic = type == ScenarioType::kAgenticCoding;
    const bool has_tp = c_.Optional(map, "tp") != YamlDoc::kNoNode;
    const bool has_workers =
        c_.Optional(map, "prefill") != YamlDoc::kNoNode || c_.Optional(map, "decode") != YamlDoc::kNoNode;
    if (e.multinode && !has_workers && has_tp) {
      c_.Fail(map, path,
              "this search-space entry has the single-node shape ('tp') but the config says multinode: true; "
              "multinode entries need 'prefill' and 'decode'");
    }
    if (!e.multinode && has_workers) {
      c_.Fail(map, path,
              "this search-space entry has the multinode shape ('prefill'/'decode') but the config says "
              "multinode: false; single-node entries need 'tp'");
    }
    if (const uint32_t t = c_.Optional(map, "kv-p2p-transfer"); t != YamlDoc::kNoNode && !e.multinode) {
      c_.Fail(t, FieldPath(path, "kv-p2p-transfer"),
              "kv-p2p-transfer is only for multinode configs (multinode: false here)");
    }
    if (e.multinode) {
      if (agentic) {
        c_.CheckKeys(map, path, {"prefill", "decode", "spec-decoding", "conc-start", "conc-end", "conc-list", "router",
                                 "kv-p2p-transfer", "kv-offloading", "kv-offload-backend"});
      } else {
        c_.CheckKeys(map, path, {"prefill", "decode", "spec-decoding", "conc-start", "conc-end", "conc-list", "router",
                                 "kv-p2p-transfer"});
      }
    } else if (agentic) {
      c_.CheckKeys(map, path, {"tp", "ep", "dp-attn", "pp", "dcp-size", "pcp-size", "spec-decoding", "conc-start",
                               "conc-end", "conc-list", "kv-offloading", "kv-offload-backend", "router"});
    } else {
      c_.CheckKeys(map, path, {"tp", "ep", "dp-attn", "pp", "dcp-size", "pcp-size", "spec-decoding", "conc-start",
                               "conc-end", "conc-list"});
    }
    SearchSpaceEntry s;
    s.line = N(map).line;
    s.column = N(map).column;
    s.path = path;
    if (e.multinode) {
      s.prefill = LoadWorker(c_.Required(map, path, "prefill"), FieldPath(path, "prefill"));
      s.decode = LoadWorker(c_.Required(map, path, "decode"), FieldPath(path, "decode"));
    } else {
      s.tp = c_.Positive(c_.Required(map, path, "tp"), FieldPath(path, "tp"));
      auto opt_pos = [&](const char* key, int64_t& out) {
        if (const uint32_t v = c_.Optional(map, key); v != YamlDoc::kNoNode) out = c_.Positive(v, FieldPath(path, key));
      };
      opt_pos("ep", s.ep);
      opt_pos("pp", s.pp);
      opt_pos("dcp-size", s.dcp_size);
      opt_pos("pcp-size", s.pcp_size);
      if (const uint32_t v = c_.Optional(map, "dp-attn"); v != YamlDoc::kNoNode) {
        s.dp_attn = c_.Bool(v, FieldPath(path, "dp-attn"));
      }
      CheckDcp(map, path, s.tp, s.dcp_size);
    }
    if (const uint32_t v = c_.Optional(map, "spec-decoding"); v != YamlDoc::kNoNode) {
      s.spec_decoding = c_.Choice(v, FieldPath(path, "spec-decoding"), {"mtp", "draft_model", "none"});
    }
    LoadConcurrency(map, path, s);
    if (const uint32_t r = c_.Optional(map, "router"); r != YamlDoc::kNoNode) {
      if (router_node_ != YamlDoc::kNoNode) {
        c_.Fail(r, FieldPath(path, "router"),
                "router scope: a router is given both for the config (at " + doc_.Where(router_node_) +
                    ") and in this search-space entry; give it in one place");
      }
      s.router = LoadNamed(r, FieldPath(path, "router"));
    }
    if (const uint32_t t = c_.Optional(map, "kv-p2p-transfer"); t != YamlDoc::kNoNode) {
      if (e.kv_p2p_transfer) {
        c_.Fail(t, FieldPath(path, "kv-p2p-transfer"),
                "kv-p2p-transfer is given both for the config and in this search-space entry; give it in one place");
      }
      s.kv_p2p_transfer = c_.Str(t, FieldPath(path, "kv-p2p-transfer"));
    }
    if (const uint32_t k = c_.Optional(map, "kv-offloading"); k != YamlDoc::kNoNode) {
      s.kv_offloading = c_.Choice(k, FieldPath(path, "kv-offloading"), {"none", "dram"});
      if (s.kv_offloading == "dram" && !row.dram_utilization) {
        c_.Fail(k, FieldPath(path, "kv-offloading"),
                "kv-offloading: dram needs 'dram-utilization' on its agentic-coding row (the share of the "
                "runner's host DRAM the offload may use)");
      }
    }
    if (const uint32_t b = c_.Optional(map, "kv-offload-backend"); b != YamlDoc::kNoNode) {
      s.kv_offload_backend = LoadNamed(b, FieldPath(path, "kv-offload-backend"));
    }
    return s;
  }

  void LoadConcurrency(uint32_t map, const std::string& path, SearchSpaceEntry& s) {
    const uint32_t list = c_.Optional(map, "conc-list");
    const uint32_t start = c_.Optional(map, "conc-start");
    const uint32_t end = c_.Optional(map, "conc-end");
    if (list != YamlDoc::kNoNode && (start != YamlDoc::kNoNode || end != YamlDoc::kNoNode)) {
      c_.Fail(map, path,
              "Cannot specify both 'conc-list' and 'conc-start'/'conc-end'; use either a range or a list, not both");
    }
    if (list == YamlDoc::kNoNode && (start == YamlDoc::kNoNode || end == YamlDoc::kNoNode)) {
      c_.Fail(map, path, "Must specify either 'conc-list' or both 'conc-start' and 'conc-end'");
    }
    if (list != YamlDoc::kNoNode) {
      const std::string f = FieldPath(path, "conc-list");
      c_.RequireSeq(list, f);
      const YNode& l = N(list);
      if (l.items.empty()) c_.Fail(list, f, "conc-list must not be empty");
      s.has_conc_list = true;
      s.conc_list.reserve(l.items.size());
      for (size_t i = 0; i < l.items.size(); ++i) s.conc_list.push_back(c_.Positive(l.items[i], FieldIndex(f, i)));
      return;
    }
    s.conc_start = c_.Positive(start, FieldPath(path, "conc-start"));
    s.conc_end = c_.Positive(end, FieldPath(path, "conc-end"));
    if (s.conc_start > s.conc_end) {
      c_.Fail(start, FieldPath(path, "conc-start"),
              "conc-start (" + std::to_string(s.conc_start) + ") must be <= conc-end (" + std::to_string(s.conc_end) + ")");
    }
  }

  const YamlDoc& doc_;
  YamlCheck c_;
  MasterConfig& into_;
  uint32_t router_node_ = YamlDoc::kNoNode;
};

Status Append(Result<YamlDoc> doc, MasterConfig& into) {
  if (!doc) return doc.error();
  const size_t before = into.entries.size();
  try {
    MasterLoader(doc.value(), into).Load();
  } catch (const YamlCheckError& e) {
    // Leave `into` as it was.
    for (size_t i = before; i < into.entries.size(); ++i) into.index.erase(into.entries[i].key);
    into.entries.resize(before);
    return Error{e.what()};
  }
  return Ok{};
}

}  // namespace

Status AppendMasterConfigString(std::string_view text, const std::string& name, MasterConfig& into) {
  return Append(YamlDoc::Parse(text, name), into);
}

Status AppendMasterConfigFile(const std::string& path, MasterConfig& into) {
  return Append(YamlDoc::ParseFile(path), into);
}

Result<MasterConfig> LoadMasterConfigFiles(const std::vector<std::string>& paths) {
  MasterConfig config;
  for (const std::string& p : paths) {
    Status s = AppendMasterConfigFile(p, config);
    if (!s) return s.error();
  }
  return config;
}

}  // namespace ix
