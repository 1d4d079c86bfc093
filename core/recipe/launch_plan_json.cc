// The launch plan as JSON (PlanToJson, PlanFromJson) and as text
// (PlanSummary): apart from the rendering, so that ix-stepd, which only
// reads the plan the plugin wrote, links no recipe or YAML code.
#include "core/recipe/launch_plan.h"
#include "core/base/json_text.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>
#include <set>

namespace ix {

const char* ReadinessKindName(ReadinessTemplate::Kind kind) {
  switch (kind) {
    case ReadinessTemplate::Kind::kHttpOk:
      return "http_ok";
    case ReadinessTemplate::Kind::kModelsNonEmpty:
      return "models_nonempty";
    case ReadinessTemplate::Kind::kTcpListening:
      return "tcp_listening";
    case ReadinessTemplate::Kind::kConnected:
      break;
  }
  return "connected";
}

namespace {

template <class Writer>
void WriteEnv(Writer& w, const EnvList& env) {
  w.StartObject();
  for (const auto& [k, v] : env) {
    w.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  }
  w.EndObject();
}

template <class Writer>
void WriteString(Writer& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

// An array of `items`, each written by `write`.
template <class Writer, class T, class Write>
void WriteList(Writer& w, const std::vector<T>& items, Write write) {
  w.StartArray();
  for (const T& x : items) write(w, x);
  w.EndArray();
}

template <class Writer>
void WritePorts(Writer& w, const PortList& ports) {
  w.StartObject();
  for (const auto& [k, v] : ports) {
    w.Key(k.c_str());
    w.Int(v);
  }
  w.EndObject();
}

template <class Writer>
void WriteRank(Writer& w, const PlannedRank& r) {
  w.StartObject();
  w.Key("rank"); w.Int64(r.rank);
  w.Key("gpus"); WriteList(w, r.gpus, [](Writer& o, int64_t g) { o.Int64(g); });
  if (!r.ports.empty()) {
    w.Key("ports"); WritePorts(w, r.ports);
  }
  w.EndObject();
}

template <class Writer>
void WriteProcess(Writer& w, const PlannedProcess& p) {
  w.StartObject();
  w.Key("name"); WriteString(w, p.name);
  if (!p.role.empty()) {  // engines and the router have none: plans without a tier read as before
    w.Key("role"); WriteString(w, p.role);
  }
  w.Key("log"); WriteString(w, p.log);
  if (p.rank >= 0) {
    w.Key("rank"); w.Int64(p.rank);
  }
  w.Key("argv"); WriteList(w, p.argv, WriteString<Writer>);
  w.Key("env"); WriteEnv(w, p.env);
  w.Key("readiness");
  WriteList(w, p.readiness, [](Writer& o, const ReadinessCheck& r) {
    o.StartObject();
    o.Key("kind"); o.String(ReadinessKindName(r.kind));
    o.Key("url"); WriteString(o, r.url);
    o.EndObject();
  });
  w.EndObject();
}

template <class Writer>
void WriteHostMemory(Writer& w, const PlannedHostMemory& h) {
  w.StartObject();
  w.Key("name"); WriteString(w, h.name);
  w.Key("per"); w.String(PerName(h.per));
  w.Key("bytes_each"); w.Uint64(h.bytes_each);
  w.Key("count"); w.Int64(h.count);
  w.Key("total_bytes"); w.Uint64(h.total_bytes);
  w.EndObject();
}

// pp and the node fields, only where they say something: a plan of the
// single-node shape reads as it did before arms could span nodes.
template <class Writer>
void WriteAcrossNodes(Writer& w, const LaunchPlan& plan) {
  if (plan.pp != 1 || plan.nodes != 1) {
    w.Key("pp"); w.Int64(plan.pp);
  }
  if (plan.nodes == 1) return;
  w.Key("nodes"); w.Int64(plan.nodes);
  w.Key("node_rank"); w.Int64(plan.node_rank);
  w.Key("head_addr"); WriteString(w, plan.head_addr);
  w.Key("step_ports"); WriteList(w, plan.step_ports, WriteString<Writer>);
}

template <class Writer>
void WriteHang(Writer& w, const PlannedHang& h) {
  w.StartObject();
  w.Key("after_s"); w.Double(h.after_s);
  w.Key("checks");
  WriteList(w, h.checks, [](Writer& o, const HangCheck& c) {
    o.StartObject();
    o.Key("process"); WriteString(o, c.process);
    o.Key("metrics_url"); WriteString(o, c.metrics_url);
    o.Key("busy"); WriteList(o, c.busy, WriteString<Writer>);
    o.Key("progress"); WriteList(o, c.progress, WriteString<Writer>);
    o.Key("per_label"); WriteString(o, c.per_label);
    o.EndObject();
  });
  w.EndObject();
}

template <class Writer>
void WritePlan(Writer& w, const LaunchPlan& plan) {
  w.StartObject();
  w.Key("recipe"); WriteString(w, plan.recipe);
  w.Key("arm"); WriteString(w, plan.arm);
  w.Key("conc"); w.Int64(plan.conc);
  w.Key("eval_only"); w.Bool(plan.eval_only);
  w.Key("gpus"); w.Int64(plan.gpus);
  w.Key("tp"); w.Int64(plan.tp);
  w.Key("ep"); w.Int64(plan.ep);
  w.Key("dp"); w.Int64(plan.dp);
  WriteAcrossNodes(w, plan);
  w.Key("dp_layout"); w.String(DpLayoutName(plan.dp_layout));
  w.Key("worker_numa_flags"); w.Bool(plan.worker_numa_flags);
  w.Key("ranks"); WriteList(w, plan.ranks, WriteRank<Writer>);
  w.Key("ports"); WritePorts(w, plan.ports);
  if (!plan.kv_offload.empty()) {  // only with a tier: plans without one read as before
    w.Key("kv_offload"); WriteString(w, plan.kv_offload);
    w.Key("files");
    WriteList(w, plan.files, [](Writer& o, const PlannedFile& f) {
      o.StartObject();
      o.Key("name"); WriteString(o, f.name);
      o.Key("text"); WriteString(o, f.text);
      o.EndObject();
    });
  }
  w.Key("processes"); WriteList(w, plan.processes, WriteProcess<Writer>);
  if (plan.hang) {  // only with a policy: plans without one read as before
    w.Key("hang"); WriteHang(w, *plan.hang);
  }
  w.Key("client_env"); WriteEnv(w, plan.client_env);
  w.Key("host_memory"); WriteList(w, plan.host_memory, WriteHostMemory<Writer>);
  w.Key("variables"); WriteEnv(w, plan.variables);
  w.EndObject();
}

// Quotes an argument for display only; nothing ever runs this string.
std::string DisplayArg(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./:=,@+%") == std::string::npos) {
    return a;
  }
  std::string out = "'";
  for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string JoinList(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string Gib(uint64_t bytes) {
  const double g = static_cast<double>(bytes) / 1073741824.0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g GiB", g);
  return buf;
}

}  // namespace

std::string PlanToJson(const LaunchPlan& plan, bool pretty) {
  return JsonText(pretty, [&](auto& w) { WritePlan(w, plan); });
}

namespace {

// Reads a PlanToJson document field by field; the first missing or
// mistyped field throws a message naming its path.
class PlanReader {
 public:
  explicit PlanReader(std::string where) : where_(std::move(where)) {}

  const rapidjson::Value& Member(const rapidjson::Value& o, const char* key, const std::string& path) {
    if (!o.IsObject()) Fail(path, "is not an object");
    auto it = o.FindMember(key);
    if (it == o.MemberEnd()) Fail(path + "." + key, "is missing");
    return it->value;
  }
  std::string Str(const rapidjson::Value& o, const char* key, const std::string& path) {
    const rapidjson::Value& v = Member(o, key, path);
    if (!v.IsString()) Fail(path + "." + key, "is not a string");
    return std::string(v.GetString(), v.GetStringLength());
  }
  int64_t Int(const rapidjson::Value& o, const char* key, const std::string& path) {
    const rapidjson::Value& v = Member(o, key, path);
    if (!v.IsInt64()) Fail(path + "." + key, "is not an integer");
    return v.GetInt64();
  }
  uint64_t Uint(const rapidjson::Value& o, const char* key, const std::string& path) {
    const rapidjson::Value& v = Member(o, key, path);
    if (!v.IsUint64()) Fail(path + "." + key, "is not a non-negative integer");
    return v.GetUint64();
  }
  bool Bool(const rapidjson::Value& o, const char* key, const std::string& path) {
    const rapidjson::Value& v = Member(o, key, path);
    if (!v.IsBool()) Fail(path + "." + key, "is not true or false");
    return v.GetBool();
  }
  const rapidjson::Value& Array(const rapidjson::Value& o, const char* key, const std::string& path) {
    const rapidjson::Value& v = Member(o, key, path);
    if (!v.IsArray()) Fail(path + "." + key, "is not an array");
    return v;
  }
  EnvList Env(const rapidjson::Value& o, const char* key, const std::string& path) {
    const rapidjson::Value& v = Member(o, key, path);
    if (!v.IsObject()) Fail(path + "." + key, "is not an object");
    EnvList out;
    for (const auto& m : v.GetObject()) {
      if (!m.value.IsString()) Fail(path + "." + key + "." + m.name.GetString(), "is not a string");
      out.emplace_back(m.name.GetString(), std::string(m.value.GetString(), m.value.GetStringLength()));
    }
    return out;
  }
  PortList Ports(const rapidjson::Value& v, const std::string& path) {
    if (!v.IsObject()) Fail(path, "is not an object");
    PortList out;
    for (const auto& m : v.GetObject()) {
      if (!m.value.IsInt() || m.value.GetInt() <= 0 || m.value.GetInt() > 65535) {
        Fail(path + "." + m.name.GetString(), "is not a port number");
      }
      out.emplace_back(m.name.GetString(), m.value.GetInt());
    }
    return out;
  }
  [[noreturn]] void Fail(const std::string& path, const std::string& what) {
    throw std::runtime_error(where_ + ": field '" + path + "' " + what);
  }

  PlannedRank Rank(const rapidjson::Value& v, const std::string& path) {
    PlannedRank rank;
    rank.rank = Int(v, "rank", path);
    for (const auto& g : Array(v, "gpus", path).GetArray()) {
      if (!g.IsInt64()) Fail(path + ".gpus", "holds a non-integer");
      rank.gpus.push_back(g.GetInt64());
    }
    if (v.HasMember("ports")) rank.ports = Ports(v["ports"], path + ".ports");
    return rank;
  }

  PlannedProcess Process(const rapidjson::Value& p, const std::string& path) {
    PlannedProcess out;
    out.name = Str(p, "name", path);
    if (p.HasMember("role")) {
      out.role = Str(p, "role", path);
      if (out.role != PlannedProcess::kServerRole) Fail(path + ".role", "is not " + std::string(PlannedProcess::kServerRole));
    }
    out.log = Str(p, "log", path);
    if (!PlainFileName(out.log)) Fail(path + ".log", "is not a plain file name");
    if (p.HasMember("rank")) out.rank = Int(p, "rank", path);
    for (const auto& a : Array(p, "argv", path).GetArray()) {
      if (!a.IsString()) Fail(path + ".argv", "holds a non-string");
      out.argv.emplace_back(a.GetString(), a.GetStringLength());
    }
    if (out.argv.empty()) Fail(path + ".argv", "is empty");
    out.env = Env(p, "env", path);
    const rapidjson::Value& checks = Array(p, "readiness", path);
    for (rapidjson::SizeType j = 0; j < checks.Size(); ++j) {
      const std::string cp = path + ".readiness[" + std::to_string(j) + "]";
      const std::string kind = Str(checks[j], "kind", cp);
      ReadinessTemplate::Kind k = ReadinessTemplate::Kind::kHttpOk;
      if (kind == "models_nonempty") {
        k = ReadinessTemplate::Kind::kModelsNonEmpty;
      } else if (kind == "connected") {
        k = ReadinessTemplate::Kind::kConnected;
      } else if (kind == "tcp_listening") {
        k = ReadinessTemplate::Kind::kTcpListening;
      } else if (kind != "http_ok") {
        Fail(cp + ".kind", "is not http_ok, models_nonempty, connected or tcp_listening");
      }
      out.readiness.push_back(ReadinessCheck{k, Str(checks[j], "url", cp)});
    }
    return out;
  }

  static bool PlainFileName(const std::string& n) {
    return !n.empty() && n.find('/') == std::string::npos && n != "." && n != "..";
  }

  PlannedFile File(const rapidjson::Value& v, const std::string& path) {
    PlannedFile f{Str(v, "name", path), Str(v, "text", path)};
    if (!PlainFileName(f.name)) Fail(path + ".name", "is not a plain file name");
    return f;
  }

  // The tier and its files (absent: no tier); its servers must come before
  // every other process, which is the order ix-stepd starts them in.
  void KvOffload(const rapidjson::Value& d, LaunchPlan& plan) {
    if (!d.HasMember("kv_offload")) return;
    plan.kv_offload = Str(d, "kv_offload", "plan");
    plan.files = List<PlannedFile>(d, "files", &PlanReader::File);
  }
  void CheckServersFirst(const LaunchPlan& plan) {
    bool other = false;
    for (size_t i = 0; i < plan.processes.size(); ++i) {
      const bool server = plan.processes[i].role == PlannedProcess::kServerRole;
      if (server && other) Fail("processes[" + std::to_string(i) + "]", "is a server after a process that is not");
      other = other || !server;
    }
  }

  std::vector<std::string> Strings(const rapidjson::Value& o, const char* key, const std::string& path) {
    std::vector<std::string> out;
    for (const auto& v : Array(o, key, path).GetArray()) {
      if (!v.IsString()) Fail(path + "." + key, "holds a non-string");
      out.emplace_back(v.GetString(), v.GetStringLength());
    }
    return out;
  }

  // The hang policy (absent: none); read after the processes, each check
  // naming one of them.
  void Hang(const rapidjson::Value& d, LaunchPlan& plan) {
    if (!d.HasMember("hang")) return;
    const rapidjson::Value& h = Member(d, "hang", "plan");
    PlannedHang hang;
    const rapidjson::Value& after = Member(h, "after_s", "hang");
    if (!after.IsNumber() || !(after.GetDouble() > 0)) Fail("hang.after_s", "is not a positive number of seconds");
    hang.after_s = after.GetDouble();
    const rapidjson::Value& checks = Array(h, "checks", "hang");
    for (rapidjson::SizeType i = 0; i < checks.Size(); ++i) {
      const std::string cp = "hang.checks[" + std::to_string(i) + "]";
      HangCheck c;
      c.process = Str(checks[i], "process", cp);
      const bool known = std::any_of(plan.processes.begin(), plan.processes.end(),
                                     [&](const PlannedProcess& p) { return p.name == c.process; });
      if (!known) Fail(cp + ".process", "names " + c.process + ", which is not a process of the plan");
      c.metrics_url = Str(checks[i], "metrics_url", cp);
      c.busy = Strings(checks[i], "busy", cp);
      if (c.busy.empty()) Fail(cp + ".busy", "is empty");
      c.progress = Strings(checks[i], "progress", cp);
      c.per_label = Str(checks[i], "per_label", cp);
      hang.checks.push_back(std::move(c));
    }
    plan.hang = std::move(hang);
  }

  PlannedHostMemory HostMemory(const rapidjson::Value& v, const std::string& path) {
    PlannedHostMemory h;
    h.name = Str(v, "name", path);
    const std::string per = Str(v, "per", path);
    h.per = per == "dp_rank" ? HostMemoryNeed::Per::kDpRank
            : per == "gpu"   ? HostMemoryNeed::Per::kGpu
                             : HostMemoryNeed::Per::kStep;
    h.bytes_each = Uint(v, "bytes_each", path);
    h.count = Int(v, "count", path);
    h.total_bytes = Uint(v, "total_bytes", path);
    return h;
  }

  // pp and the node fields (absent: one node, no pipeline stages), checked
  // against each other and the plan's ports.
  void AcrossNodes(const rapidjson::Value& d, LaunchPlan& plan) {
    const std::string top = "plan";
    if (d.HasMember("pp")) plan.pp = Int(d, "pp", top);
    if (plan.pp < 1) Fail("pp", "is not a positive integer");
    const bool any = d.HasMember("nodes") || d.HasMember("node_rank") || d.HasMember("head_addr") ||
                     d.HasMember("step_ports");
    if (!any) return;
    plan.nodes = Int(d, "nodes", top);
    if (plan.nodes < 1) Fail("nodes", "is not a positive integer");
    plan.node_rank = Int(d, "node_rank", top);
    if (plan.node_rank < 0 || plan.node_rank >= plan.nodes) {
      Fail("node_rank", "is outside 0.." + std::to_string(plan.nodes - 1));
    }
    plan.head_addr = Str(d, "head_addr", top);
    if (plan.nodes > 1 && plan.head_addr.empty()) Fail("head_addr", "is empty");
    for (const auto& p : Array(d, "step_ports", top).GetArray()) {
      if (!p.IsString()) Fail("step_ports", "holds a non-string");
      plan.step_ports.emplace_back(p.GetString(), p.GetStringLength());
    }
  }

  void CheckStepPorts(const LaunchPlan& plan) {
    for (const std::string& name : plan.step_ports) {
      const bool found = std::any_of(plan.ports.begin(), plan.ports.end(), [&](const auto& p) { return p.first == name; });
      if (!found) Fail("step_ports", "names " + name + ", which is not in ports");
    }
  }

  // Each element of the array `key` of `o`, read by `read` as "key[i]".
  template <class T, class Read>
  std::vector<T> List(const rapidjson::Value& o, const char* key, Read read) {
    const rapidjson::Value& list = Array(o, key, "plan");
    std::vector<T> out;
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
      out.push_back((this->*read)(list[i], std::string(key) + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

 private:
  std::string where_;
};

}  // namespace

Result<LaunchPlan> PlanFromJson(const std::string& text, const std::string& where) {
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError()) {
    return Error{where + ": not JSON (offset " + std::to_string(d.GetErrorOffset()) + ")"};
  }
  PlanReader r(where);
  LaunchPlan plan;
  try {
    const std::string top = "plan";
    plan.recipe = r.Str(d, "recipe", top);
    plan.arm = r.Str(d, "arm", top);
    plan.conc = r.Int(d, "conc", top);
    plan.eval_only = r.Bool(d, "eval_only", top);
    plan.gpus = r.Int(d, "gpus", top);
    plan.tp = r.Int(d, "tp", top);
    plan.ep = r.Int(d, "ep", top);
    plan.dp = r.Int(d, "dp", top);
    r.AcrossNodes(d, plan);
    const std::string layout = r.Str(d, "dp_layout", top);
    if (layout != "engine" && layout != "rank-process") r.Fail("dp_layout", "is not engine or rank-process");
    plan.dp_layout = layout == "engine" ? DpLayout::kEngine : DpLayout::kRankProcess;
    plan.worker_numa_flags = r.Bool(d, "worker_numa_flags", top);
    plan.ranks = r.List<PlannedRank>(d, "ranks", &PlanReader::Rank);
    plan.ports = r.Ports(r.Member(d, "ports", top), "ports");
    r.CheckStepPorts(plan);
    r.KvOffload(d, plan);
    plan.processes = r.List<PlannedProcess>(d, "processes", &PlanReader::Process);
    r.CheckServersFirst(plan);
    r.Hang(d, plan);
    plan.client_env = r.Env(d, "client_env", top);
    plan.host_memory = r.List<PlannedHostMemory>(d, "host_memory", &PlanReader::HostMemory);
    plan.variables = r.Env(d, "variables", top);
  } catch (const std::runtime_error& e) {
    return Error{e.what()};
  }
  return plan;
}

std::string PlanSummary(const LaunchPlan& plan) {
  std::string s;
  s += "recipe " + plan.recipe + ", arm " + plan.arm + ", concurrency " +
       std::to_string(plan.conc) + (plan.eval_only ? " (eval-only)" : " (throughput)") + "\n";
  s += "gpus " + std::to_string(plan.gpus) + (plan.nodes > 1 ? " per node" : "") + ": tp " +
       std::to_string(plan.tp) + (plan.pp != 1 ? ", pp " + std::to_string(plan.pp) : "") + ", ep " +
       std::to_string(plan.ep) + ", dp " + std::to_string(plan.dp) +
       (plan.dp_layout == DpLayout::kRankProcess ? " (one engine process per rank)" : "") +
       (plan.worker_numa_flags ? " (the engine places its workers: engine.numa_flags)" : "") + "; ranks:";
  for (const auto& r : plan.ranks) {
    s += " " + std::to_string(r.rank) + ":[";
    for (size_t i = 0; i < r.gpus.size(); ++i) s += (i ? "," : "") + std::to_string(r.gpus[i]);
    s += "]";
  }
  s += "\n";
  if (plan.nodes > 1) {
    s += "node " + std::to_string(plan.node_rank) + " of " + std::to_string(plan.nodes) + " (" +
         (plan.node_rank == 0 ? "the head, " : "") + "head address " + plan.head_addr + ")\n";
  }
  s += "ports:";
  for (const auto& [k, v] : plan.ports) {
    const bool step = std::find(plan.step_ports.begin(), plan.step_ports.end(), k) != plan.step_ports.end();
    s += " " + k + "=" + std::to_string(v) + (step ? " (step)" : "");
  }
  s += "\n";
  if (!plan.kv_offload.empty()) s += "kv offload tier: " + plan.kv_offload + "\n";
  for (const auto& f : plan.files) {
    s += "file " + f.name + " in the run directory:\n";
    for (size_t at = 0; at < f.text.size();) {
      const size_t nl = f.text.find('\n', at);
      s += "  | " + f.text.substr(at, nl == std::string::npos ? std::string::npos : nl - at) + "\n";
      at = nl == std::string::npos ? f.text.size() : nl + 1;
    }
  }
  for (const auto& p : plan.processes) {
    s += p.name + (p.role.empty() ? "" : " (" + p.role + ", started before the engine)") + " (log " + p.log +
         "):\n  argv:";
    for (const auto& a : p.argv) s += " " + DisplayArg(a);
    s += "\n  env:";
    for (const auto& [k, v] : p.env) s += " " + k + "=" + DisplayArg(v);
    s += "\n";
    for (const auto& r : p.readiness) {
      if (r.kind == ReadinessTemplate::Kind::kConnected) {
        s += "  ready when: holds a TCP connection to the head " + r.url + "\n";
        continue;
      }
      if (r.kind == ReadinessTemplate::Kind::kTcpListening) {
        s += "  ready when: " + r.url + " accepts TCP connections\n";
        continue;
      }
      s += "  ready when: GET " + r.url +
           (r.kind == ReadinessTemplate::Kind::kHttpOk ? " answers 200" : " lists a model") + "\n";
    }
  }
  if (plan.hang) {
    char after[32];
    std::snprintf(after, sizeof after, "%g", plan.hang->after_s);
    s += std::string("hang: after ") + after + " s busy without progress" + (plan.hang->checks.empty() ? " (nothing to watch on this node)" : "") + "\n";
    for (const HangCheck& c : plan.hang->checks) {
      s += "  " + c.process + ": " + c.metrics_url + " busy " + JoinList(c.busy) + ", progress " +
           (c.progress.empty() ? std::string("the engines'") : JoinList(c.progress)) +
           (c.per_label.empty() ? "" : ", per " + c.per_label) + "\n";
    }
  }
  s += "client env:";
  for (const auto& [k, v] : plan.client_env) s += " " + k + "=" + DisplayArg(v);
  s += "\n";
  for (const auto& h : plan.host_memory) {
    s += "host memory: " + h.name + " " + Gib(h.bytes_each) + " x " + std::to_string(h.count) +
         " " + PerName(h.per) + " = " + Gib(h.total_bytes) + "\n";
  }
  return s;
}

}  // namespace ix
