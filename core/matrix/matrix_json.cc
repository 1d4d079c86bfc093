#include "core/matrix/matrix_json.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace ix {
namespace {

const char kHex[] = "0123456789abcdef";

void AppendU(std::string& out, uint32_t u) {
  const char buf[6] = {'\\', 'u', kHex[(u >> 12) & 15], kHex[(u >> 8) & 15], kHex[(u >> 4) & 15], kHex[u & 15]};
  out.append(buf, 6);
}

bool Plain(unsigned char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; }

// Decodes one UTF-8 sequence at s[i]; returns its length (1 and U+FFFD for
// a malformed byte, which libyaml-checked input never has).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t& cp) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) return cp = 0xfffd, 1;
  cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return cp = 0xfffd, 1;
    cp = (cp << 6) | (cc & 0x3f);
  }
  return len;
}

void AppendKey(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\": ";
}

void Sep(std::string& out) { out += ", "; }

void Bool(std::string& out, bool b) { out += b ? "true" : "false"; }

// "[a, b, ...]", each item written by `append`.
template <class T, class Append>
void List(std::string& out, const std::vector<T>& items, Append append) {
  out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) Sep(out);
    append(out, items[i]);
  }
  out += ']';
}

// `canonical`: one key order whatever was written, for identities (the
// reference compares these objects as dicts, where order does not count).
void Named(std::string& out, const NamedVersion& nv, bool canonical = false) {
  const bool version_first = nv.version_first && !canonical;
  out += '{';
  if (nv.version && version_first) {
    AppendKey(out, "version");
    AppendJsonString(out, *nv.version);
    Sep(out);
  }
  AppendKey(out, "name");
  AppendJsonString(out, nv.name);
  if (nv.version && !version_first) {
    Sep(out);
    AppendKey(out, "version");
    AppendJsonString(out, *nv.version);
  }
  out += '}';
}

void Worker(std::string& out, const WorkerSpec& w, bool canonical = false) {
  using F = WorkerSpec::Field;
  // Canonical: the written fields in enum order, then pp, dcp-size, pcp-size
  // (a written `pp: 1` equals the default the reference adds).
  std::vector<F> canonical_order;
  if (canonical) {
    for (F f : w.order) {
      if (f != F::kPp && f != F::kDcpSize && f != F::kPcpSize) canonical_order.push_back(f);
    }
    std::sort(canonical_order.begin(), canonical_order.end());
  }
  out += '{';
  bool first = true;
  bool pp = false, dcp = false, pcp = false;
  auto field = [&](const char* key) {
    if (!first) Sep(out);
    first = false;
    AppendKey(out, key);
  };
  for (F f : canonical ? canonical_order : w.order) {
    switch (f) {
      case F::kNumWorker: field("num-worker"), AppendJsonInt(out, w.num_worker); break;
      case F::kTp: field("tp"), AppendJsonInt(out, w.tp); break;
      case F::kEp: field("ep"), AppendJsonInt(out, w.ep); break;
      case F::kDpAttn: field("dp-attn"), Bool(out, w.dp_attn); break;
      case F::kAdditionalSettings: {
        field("additional-settings");
        List(out, w.additional_settings, [](std::string& o, const std::string& v) { AppendJsonString(o, v); });
        break;
      }
      case F::kPp: field("pp"), AppendJsonInt(out, w.pp), pp = true; break;
      case F::kDcpSize: field("dcp-size"), AppendJsonInt(out, w.dcp_size), dcp = true; break;
      case F::kPcpSize: field("pcp-size"), AppendJsonInt(out, w.pcp_size), pcp = true; break;
    }
  }
  if (!pp) field("pp"), AppendJsonInt(out, w.pp);
  if (!dcp) field("dcp-size"), AppendJsonInt(out, w.dcp_size);
  if (!pcp) field("pcp-size"), AppendJsonInt(out, w.pcp_size);
  out += '}';
}

void IntList(std::string& out, const std::vector<int64_t>& v) { List(out, v, AppendJsonInt); }

void Str(std::string& out, const char* key, const std::string& value) {
  Sep(out);
  AppendKey(out, key);
  AppendJsonString(out, value);
}

void Int(std::string& out, const char* key, int64_t value) {
  Sep(out);
  AppendKey(out, key);
  AppendJsonInt(out, value);
}

void Flag(std::string& out, const char* key, bool value) {
  Sep(out);
  AppendKey(out, key);
  Bool(out, value);
}

void RunEvalField(std::string& out, const MatrixEntry& e) {
  if (e.run_eval != RunEval::kAbsent) Flag(out, "run-eval", e.run_eval == RunEval::kTrue);
}

void EvalTail(std::string& out, const MatrixEntry& e) {
  if (e.has_eval_conc) Int(out, "eval-conc", e.eval_conc);
  if (e.eval_all_concs) Flag(out, "eval-all-concs", true);
  if (e.eval_only) Flag(out, "eval-only", true);
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && Plain(static_cast<unsigned char>(s[j]))) ++j;
    out.append(s.data() + i, j - i);
    if (j == s.size()) break;
    const unsigned char c = static_cast<unsigned char>(s[j]);
    i = j + 1;
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x80) {
      AppendU(out, c);
      continue;
    }
    uint32_t cp = 0;
    i = j + DecodeUtf8(s, j, cp);
    if (cp > 0xffff) {
      cp -= 0x10000;
      AppendU(out, 0xd800 + (cp >> 10));
      AppendU(out, 0xdc00 + (cp & 0x3ff));
    } else {
      AppendU(out, cp);
    }
  }
  out += '"';
}

void AppendJsonInt(std::string& out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

namespace {

// `identity`: as without_conc, and also without run-eval and the eval
// fields, nested objects in canonical key order.
void Entry(std::string& out, const MatrixEntry& e, bool without_conc, bool identity) {
  const ConfigEntry& c = *e.config;
  const SearchSpaceEntry& s = *e.ss;
  out += '{';
  AppendKey(out, "image");
  AppendJsonString(out, c.image);
  Str(out, "model", c.model);
  Str(out, "model-prefix", c.model_prefix);
  Str(out, "precision", c.precision);
  Str(out, "framework", c.framework);
  Str(out, "runner", *e.runner);
  const NamedVersion* router = s.router ? &*s.router : c.router ? &*c.router : nullptr;
  const std::string* p2p = s.kv_p2p_transfer ? &*s.kv_p2p_transfer : c.kv_p2p_transfer ? &*c.kv_p2p_transfer : nullptr;
  switch (e.kind) {
    case EntryKind::kSingleFixed:
      Int(out, "isl", e.row->isl);
      Int(out, "osl", e.row->osl);
      Int(out, "tp", s.tp);
      Int(out, "pp", s.pp);
      Int(out, "dcp-size", s.dcp_size);
      Int(out, "pcp-size", s.pcp_size);
      if (!without_conc) Int(out, "conc", e.conc);
      Int(out, "max-model-len", e.row->isl + e.row->osl + 256);
      Int(out, "ep", s.ep);
      Flag(out, "dp-attn", s.dp_attn);
      Str(out, "spec-decoding", s.spec_decoding);
      if (!without_conc) Str(out, "exp-name", ExpName(e));
      Flag(out, "disagg", c.disagg);
      if (!identity) RunEvalField(out, e), EvalTail(out, e);
      break;
    case EntryKind::kMultiFixed:
      Int(out, "isl", e.row->isl);
      Int(out, "osl", e.row->osl);
      Str(out, "spec-decoding", s.spec_decoding);
      Sep(out), AppendKey(out, "prefill"), Worker(out, s.prefill, identity);
      Sep(out), AppendKey(out, "decode"), Worker(out, s.decode, identity);
      if (!without_conc) Sep(out), AppendKey(out, "conc"), IntList(out, e.concs);
      Int(out, "max-model-len", e.row->isl + e.row->osl + 256);
      if (!without_conc) Str(out, "exp-name", ExpName(e));
      Flag(out, "disagg", c.disagg);
      if (!identity) RunEvalField(out, e);
      if (router) Sep(out), AppendKey(out, "router"), Named(out, *router, identity);
      if (p2p) Str(out, "kv-p2p-transfer", *p2p);
      if (!identity) EvalTail(out, e);
      break;
    case EntryKind::kSingleAgentic:
      Int(out, "tp", s.tp);
      Int(out, "pp", s.pp);
      Int(out, "dcp-size", s.dcp_size);
      Int(out, "pcp-size", s.pcp_size);
      Int(out, "ep", s.ep);
      Flag(out, "dp-attn", s.dp_attn);
      Str(out, "spec-decoding", s.spec_decoding);
      if (!without_conc) Int(out, "conc", e.conc);
      Str(out, "kv-offloading", s.kv_offloading);
      Int(out, "total-cpu-dram-gb", e.total_cpu_dram_gb);
      Int(out, "duration", e.row->duration);
      if (!without_conc) Str(out, "exp-name", ExpName(e));
      Str(out, "scenario-type", "agentic-coding");
      if (s.kv_offload_backend) Sep(out), AppendKey(out, "kv-offload-backend"), Named(out, *s.kv_offload_backend, identity);
      if (router) Sep(out), AppendKey(out, "router"), Named(out, *router, identity);
      if (!identity) RunEvalField(out, e), EvalTail(out, e);
      break;
    case EntryKind::kMultiAgentic:
      Str(out, "spec-decoding", s.spec_decoding);
      Sep(out), AppendKey(out, "prefill"), Worker(out, s.prefill, identity);
      Sep(out), AppendKey(out, "decode"), Worker(out, s.decode, identity);
      if (!without_conc) Sep(out), AppendKey(out, "conc"), IntList(out, e.concs);
      Str(out, "kv-offloading", s.kv_offloading);
      Int(out, "total-cpu-dram-gb", e.total_cpu_dram_gb);
      Int(out, "duration", e.row->duration);
      if (!without_conc) Str(out, "exp-name", ExpName(e));
      Flag(out, "disagg", c.disagg);
      Str(out, "scenario-type", "agentic-coding");
      if (s.kv_offload_backend) Sep(out), AppendKey(out, "kv-offload-backend"), Named(out, *s.kv_offload_backend, identity);
      if (router) Sep(out), AppendKey(out, "router"), Named(out, *router, identity);
      if (p2p) Str(out, "kv-p2p-transfer", *p2p);
      if (!identity) RunEvalField(out, e), EvalTail(out, e);
      break;
  }
  out += '}';
}

}  // namespace

void AppendMatrixEntry(std::string& out, const MatrixEntry& e, bool without_conc) {
  Entry(out, e, without_conc, /*identity=*/false);
}

void AppendMultinodeIdentity(std::string& out, const MatrixEntry& e) {
  Entry(out, e, /*without_conc=*/true, /*identity=*/true);
}

void AppendMatrixList(std::string& out, const std::vector<MatrixEntry>& entries) {
  List(out, entries, [](std::string& o, const MatrixEntry& e) { AppendMatrixEntry(o, e); });
}

std::string MatrixToJson(const std::vector<MatrixEntry>& entries) {
  std::string out;
  out.reserve(entries.size() * 640 + 2);
  AppendMatrixList(out, entries);
  return out;
}

}  // namespace ix
