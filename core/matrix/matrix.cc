#include "core/matrix/matrix.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/matrix/matrix_json.h"

namespace ix {

int64_t MatrixEntry::MinConc() const {
  if (!multinode()) return conc;
  return concs.empty() ? 0 : *std::min_element(concs.begin(), concs.end());
}

std::string SeqLenName(int64_t isl, int64_t osl) {
  if (isl == 1024 && osl == 1024) return "1k1k";
  if (isl == 1024 && osl == 8192) return "1k8k";
  if (isl == 8192 && osl == 1024) return "8k1k";
  return std::to_string(isl) + "_" + std::to_string(osl);
}

bool ParseSeqLen(const std::string& name, std::pair<int64_t, int64_t>& out) {
  if (name == "1k1k") return out = {1024, 1024}, true;
  if (name == "1k8k") return out = {1024, 8192}, true;
  if (name == "8k1k") return out = {8192, 1024}, true;
  return false;
}

bool GlobMatch(std::string_view p, std::string_view t) {
  size_t pi = 0, ti = 0, star_p = std::string_view::npos, star_t = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star_p = pi++, star_t = ti;
      continue;
    }
    if (pi < p.size() && p[pi] == '[') {
      // [seq] / [!seq]; an unclosed '[' is a literal, as in fnmatch.
      size_t k = pi + 1;
      const bool negate = k < p.size() && p[k] == '!';
      if (negate) ++k;
      size_t close = k < p.size() && p[k] == ']' ? k + 1 : k;
      while (close < p.size() && p[close] != ']') ++close;
      if (close < p.size()) {
        bool hit = false;
        for (size_t m = k; m < close; ++m) {
          if (m + 2 < close && p[m + 1] == '-') {
            hit = hit || (t[ti] >= p[m] && t[ti] <= p[m + 2]);
            m += 2;
          } else {
            hit = hit || t[ti] == p[m];
          }
        }
        if (hit != negate) {
          pi = close + 1, ++ti;
          continue;
        }
      } else if (t[ti] == '[') {
        ++pi, ++ti;
        continue;
      }
    } else if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi, ++ti;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p + 1, ti = ++star_t;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

namespace {

std::string WorkerTag(const WorkerSpec& w) {
  std::string s = std::to_string(w.num_worker) + "x" + std::to_string(w.tp);
  if (w.ep > 1) s += "ep" + std::to_string(w.ep);
  if (w.dp_attn) s += "dpa";
  return s;
}

std::string KvTag(const SearchSpaceEntry& s) {
  std::string t = "kv" + s.kv_offloading;
  if (s.kv_offload_backend) t += "-" + s.kv_offload_backend->name;
  return t;
}

bool HasPrefix(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

template <class T>
bool Contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

constexpr int64_t kDramCapMib = 2861022;  // 3 TB: the reference caps host DRAM per node here
constexpr int64_t kEvalMinConc = 16;

class Generator {
 public:
  Generator(const MasterConfig& config, const RunnerConfig& runners, const SweepOptions& o)
      : config_(config), runners_(runners), o_(o) {}

  Result<std::vector<MatrixEntry>> Run() {
    Result<std::vector<const ConfigEntry*>> selected = Select();
    if (!selected) return selected.error();
    for (const ConfigEntry* c : selected.value()) {
      if (Status s = Expand(*c); !s) return s.error();
    }
    std::vector<MatrixEntry> out = MarkEvals();
    if (o_.runner_node_filter) return FilterNodes(std::move(out));
    return out;
  }

 private:
  Result<std::vector<const ConfigEntry*>> Select() {
    std::vector<const ConfigEntry*> out;
    if (o_.command == SweepOptions::Command::kTestConfig) {
      std::set<const ConfigEntry*> seen;
      for (const std::string& pat : o_.config_keys) {
        const bool glob = pat.find_first_of("*?[") != std::string::npos;
        if (!glob) {
          const ConfigEntry* c = config_.Find(pat);
          if (c == nullptr) return Error{"config key '" + pat + "' not found in the config files"};
          if (seen.insert(c).second) out.push_back(c);
          continue;
        }
        bool any = false;
        for (const ConfigEntry& c : config_.entries) {
          if (!GlobMatch(pat, c.key)) continue;
          any = true;
          if (seen.insert(&c).second) out.push_back(&c);
        }
        if (!any) return Error{"no config key matches the pattern '" + pat + "'"};
      }
      return out;
    }
    std::vector<std::string> bad;
    for (const std::string& r : o_.runner_types) {
      if (!runners_.FindLabel(r)) bad.push_back(r);
    }
    if (!bad.empty()) {
      std::vector<std::string> valid;
      for (const RunnerLabel& l : runners_.labels) valid.push_back(l.name);
      std::sort(valid.begin(), valid.end());
      std::string b, v;
      for (const std::string& x : bad) b += (b.empty() ? "'" : ", '") + x + "'";
      for (const std::string& x : valid) v += (v.empty() ? "" : ", ") + x;
      return Error{"Invalid runner type(s): " + b + ". Valid runner types are: " + v};
    }
    for (const ConfigEntry& c : config_.entries) {
      if (!o_.model_prefixes.empty() &&
          std::none_of(o_.model_prefixes.begin(), o_.model_prefixes.end(),
                       [&](const std::string& p) { return HasPrefix(c.key, p); })) {
        continue;
      }
      if (!o_.precisions.empty() && !Contains(o_.precisions, c.precision)) continue;
      if (!o_.frameworks.empty() && !Contains(o_.frameworks, c.framework)) continue;
      if (!o_.runner_types.empty() && !Contains(o_.runner_types, c.runner)) continue;
      if (o_.single_node && c.multinode) continue;
      if (o_.multi_node && !c.multinode) continue;
      out.push_back(&c);
    }
    return out;
  }

  bool TooWide(const ConfigEntry& c, const SearchSpaceEntry& s) const {
    auto over = [](const std::optional<int64_t>& lim, int64_t v) { return lim && v > *lim; };
    if (c.multinode) {
      return over(o_.max_tp, s.prefill.tp) || over(o_.max_tp, s.decode.tp) || over(o_.max_ep, s.prefill.ep) ||
             over(o_.max_ep, s.decode.ep);
    }
    return over(o_.max_tp, s.tp) || over(o_.max_ep, s.ep);
  }

  Result<int64_t> DramGb(const ConfigEntry& c, const ScenarioRow& row, const SearchSpaceEntry& s) {
    if (s.kv_offloading != "dram") return int64_t{0};
    const RunnerHardware* hw = runners_.FindHardware(c.runner);
    if (hw == nullptr) {
      return Error{c.file + ":" + std::to_string(c.runner_line) + ":" + std::to_string(c.runner_column) + ": " +
                   c.key + ": field 'runner': runner '" + c.runner + "' has no entry under 'hardware' in " +
                   runners_.file + " (needed for kv-offloading: dram at " + s.path + ")"};
    }
    const int64_t gpus = c.multinode ? std::min(s.prefill.tp, hw->gpus_per_node) : s.tp;
    // The reference's expression, in its order of operations.
    const double bytes = static_cast<double>(std::min(hw->available_cpu_dram_mib, kDramCapMib) * 1048576);
    const double gb = bytes * *row.dram_utilization * static_cast<double>(gpus) /
                      static_cast<double>(hw->gpus_per_node) / 1e9;
    return static_cast<int64_t>(gb);
  }

  Status Expand(const ConfigEntry& c) {
    const bool full = o_.command == SweepOptions::Command::kFullSweep;
    for (const Scenario& sc : c.scenarios) {
      if (!o_.scenario_types.empty() && !Contains(o_.scenario_types, std::string(ScenarioTypeName(sc.type)))) {
        continue;
      }
      const bool fixed = sc.type == ScenarioType::kFixedSeqLen;
      for (const ScenarioRow& row : sc.rows) {
        if (full && fixed && !o_.seq_lens.empty() && !Contains(o_.seq_lens, std::make_pair(row.isl, row.osl))) {
          continue;
        }
        for (const SearchSpaceEntry& s : row.search_space) {
          if (full && TooWide(c, s)) continue;
          std::vector<int64_t> concs =
              !o_.conc.empty() ? o_.conc
                               : ExpandConcurrency(s, fixed, o_.step_size, full ? o_.min_conc : std::nullopt,
                                                   full ? o_.max_conc : std::nullopt);
          if (concs.empty()) continue;
          Result<int64_t> dram = DramGb(c, row, s);
          if (!dram) return dram.error();
          MatrixEntry base;
          base.config = &c;
          base.row = &row;
          base.ss = &s;
          base.runner = &c.runner;
          base.total_cpu_dram_gb = dram.value();
          if (s.kv_offloading == "dram") base.hardware = runners_.FindHardware(c.runner);
          if (fixed && c.multinode) {
            base.kind = EntryKind::kMultiFixed;
            base.concs = std::move(concs);
            base.run_eval = RunEval::kFalse;
            entries_.push_back(std::move(base));
          } else if (c.multinode) {
            base.kind = EntryKind::kMultiAgentic;
            for (int64_t v : concs) {
              MatrixEntry e = base;
              e.concs = {v};
              e.name_conc = v;
              entries_.push_back(std::move(e));
            }
          } else {
            base.kind = fixed ? EntryKind::kSingleFixed : EntryKind::kSingleAgentic;
            if (fixed) base.run_eval = RunEval::kFalse;
            for (int64_t v : concs) {
              MatrixEntry e = base;
              e.conc = v;
              e.name_conc = v;
              entries_.push_back(std::move(e));
            }
          }
        }
      }
    }
    return Ok{};
  }

  static bool Is8k1k(const MatrixEntry& e) { return e.row->isl == 8192 && e.row->osl == 1024; }

  // Single-node fixed-seq-len evals: per (model, runner, framework,
  // precision, isl, osl, spec-decoding, dp-attn) of 8k1k entries, ignoring
  // conc < 16, the entries at the highest and the upper-median concurrency.
  std::vector<bool> SingleFixedEvals() const {
    using Key = std::tuple<const std::string*, const std::string*, const std::string*, const std::string*, int64_t,
                           int64_t, const std::string*, bool>;
    struct Less {
      bool operator()(const Key& a, const Key& b) const {
        auto s = [](const std::string* x, const std::string* y) { return *x < *y ? -1 : *y < *x ? 1 : 0; };
        if (int r = s(std::get<0>(a), std::get<0>(b))) return r < 0;
        if (int r = s(std::get<1>(a), std::get<1>(b))) return r < 0;
        if (int r = s(std::get<2>(a), std::get<2>(b))) return r < 0;
        if (int r = s(std::get<3>(a), std::get<3>(b))) return r < 0;
        if (std::get<4>(a) != std::get<4>(b)) return std::get<4>(a) < std::get<4>(b);
        if (std::get<5>(a) != std::get<5>(b)) return std::get<5>(a) < std::get<5>(b);
        if (int r = s(std::get<6>(a), std::get<6>(b))) return r < 0;
        return std::get<7>(a) < std::get<7>(b);
      }
    };
    std::map<Key, std::vector<size_t>, Less> groups;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const MatrixEntry& e = entries_[i];
      if (e.kind != EntryKind::kSingleFixed || !Is8k1k(e) || e.conc < kEvalMinConc) continue;
      const ConfigEntry& c = *e.config;
      groups[Key{&c.model, &c.runner, &c.framework, &c.precision, e.row->isl, e.row->osl, &e.ss->spec_decoding,
                 e.ss->dp_attn}]
          .push_back(i);
    }
    std::vector<bool> sel(entries_.size(), false);
    for (const auto& [key, ids] : groups) {
      std::vector<int64_t> cs;
      for (size_t i : ids) cs.push_back(entries_[i].conc);
      std::sort(cs.begin(), cs.end());
      cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
      const int64_t top = cs.back(), median = cs[cs.size() / 2];
      for (size_t i : ids) sel[i] = entries_[i].conc == top || entries_[i].conc == median;
    }
    return sel;
  }

  // Single-node agentic evals: the highest-concurrency entry (first on a
  // tie) per (model, runner, framework, precision), or per topology too.
  std::vector<bool> SingleAgenticEvals() const {
    std::unordered_map<std::string, size_t> best;
    std::vector<std::string> order;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const MatrixEntry& e = entries_[i];
      if (e.kind != EntryKind::kSingleAgentic) continue;
      const ConfigEntry& c = *e.config;
      std::string key = c.model + '\0' + c.runner + '\0' + c.framework + '\0' + c.precision;
      if (o_.eval_per_topology) {
        key += '\0' + std::to_string(e.ss->tp) + '\0' + std::to_string(e.ss->ep) + (e.ss->dp_attn ? "\1" : "\2");
      }
      auto [it, fresh] = best.emplace(key, i);
      if (!fresh && e.conc > entries_[it->second].conc) it->second = i;
    }
    std::vector<bool> sel(entries_.size(), false);
    for (const auto& [key, i] : best) sel[i] = true;
    return sel;
  }

  // Eval marking, as the reference's main(): mark_eval_entries (agentic
  // entries too with --evals-only/--all-evals), then for --all-evals
  // mark_all_eval_entries, then the evals-only filter.
  std::vector<MatrixEntry> MarkEvals() {
    const EvalMode mode = o_.evals;
    if (mode == EvalMode::kNone) return std::move(entries_);
    std::vector<std::vector<size_t>> members;
    const std::vector<size_t> group = MultinodeGroups(members);
    if (mode == EvalMode::kAll) return MarkAllEvals(group, members);
    const std::vector<bool> sn_fixed = SingleFixedEvals();
    const std::vector<bool> sn_agentic = SingleAgenticEvals();
    // mark_eval_entries' mn_groups/ag_mn_groups: one eval per multinode
    // group, the member holding the highest concurrency >= 16 (the first on
    // a tie, as Python's max), with that concurrency as eval-conc.
    std::vector<int64_t> mn_eval(entries_.size(), 0);  // 0: not the group's eval
    for (const std::vector<size_t>& m : members) {
      if (mode == EvalMode::kDefault && entries_[m[0]].agentic()) continue;  // agentic evals are opt-in
      size_t best = 0;
      int64_t top = 0;
      for (size_t i : m) {
        const int64_t t = TopEvalConc(entries_[i].concs);
        if (t > top) best = i, top = t;
      }
      if (top > 0) mn_eval[best] = top;
    }
    std::vector<MatrixEntry> out;
    out.reserve(entries_.size());
    for (size_t i = 0; i < entries_.size(); ++i) {
      MatrixEntry& e = entries_[i];
      bool mark = false;
      switch (e.kind) {
        case EntryKind::kSingleFixed: mark = sn_fixed[i]; break;
        case EntryKind::kSingleAgentic: mark = mode == EvalMode::kOnly && sn_agentic[i]; break;
        case EntryKind::kMultiFixed:
        case EntryKind::kMultiAgentic:
          mark = mn_eval[i] > 0;
          e.has_eval_conc = mark;
          e.eval_conc = mn_eval[i];
          break;
      }
      // The reference sets run-eval on every entry, agentic ones too.
      e.run_eval = mark ? RunEval::kTrue : RunEval::kFalse;
      if (mode == EvalMode::kOnly) {
        if (!mark) continue;
        e.eval_only = true;
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  // The highest concurrency >= 16 of `concs`, 0 when none.
  static int64_t TopEvalConc(const std::vector<int64_t>& concs) {
    int64_t top = 0;
    for (int64_t v : concs) top = v >= kEvalMinConc ? std::max(top, v) : top;
    return top;
  }

  // The reference's _multinode_parallelism_key groups: 8k1k multinode
  // fixed-seq-len entries and multinode agentic entries equal apart from
  // conc, exp-name and the eval fields, wherever their rows are (two
  // search-space rows of one topology with different conc-lists are one
  // group). Returns each entry's group (npos: none); `members` lists each
  // group's entries in order.
  std::vector<size_t> MultinodeGroups(std::vector<std::vector<size_t>>& members) const {
    std::vector<size_t> group(entries_.size(), std::string::npos);
    std::unordered_map<std::string, size_t> group_of;
    std::string ident;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const MatrixEntry& e = entries_[i];
      if (e.kind != EntryKind::kMultiAgentic && !(e.kind == EntryKind::kMultiFixed && Is8k1k(e))) continue;
      ident.clear();
      AppendMultinodeIdentity(ident, e);
      auto [it, fresh] = group_of.emplace(ident, members.size());
      if (fresh) members.emplace_back();
      members[it->second].push_back(i);
      group[i] = it->second;
    }
    return group;
  }

  // --all-evals (mark_all_eval_entries, then the evals-only filter): every
  // 8k1k single-node entry and every single-node agentic entry; each
  // multinode group as one entry at its first member's place, the first
  // member with the sorted distinct concurrencies of the whole group
  // (fixed-seq-len: eval-all-concs; agentic: eval-conc, the highest).
  std::vector<MatrixEntry> MarkAllEvals(const std::vector<size_t>& group,
                                        const std::vector<std::vector<size_t>>& members) {
    std::vector<MatrixEntry> out;
    std::vector<bool> placed(members.size(), false);
    for (size_t i = 0; i < entries_.size(); ++i) {
      MatrixEntry& e = entries_[i];
      const size_t g = group[i];
      if (g != std::string::npos) {
        if (placed[g]) continue;  // merged into the group's first member
        placed[g] = true;
        std::vector<int64_t> concs;
        for (size_t j : members[g]) concs.insert(concs.end(), entries_[j].concs.begin(), entries_[j].concs.end());
        std::sort(concs.begin(), concs.end());
        concs.erase(std::unique(concs.begin(), concs.end()), concs.end());
        if (e.kind == EntryKind::kMultiAgentic) {
          e.has_eval_conc = true;
          e.eval_conc = concs.back();
        } else {
          e.eval_all_concs = true;
        }
        e.concs = std::move(concs);
      } else if (!e.agentic() && !Is8k1k(e)) {
        continue;  // evals run at 8k1k only
      }
      e.run_eval = RunEval::kTrue;
      e.eval_only = true;
      out.push_back(std::move(e));
    }
    return out;
  }

  // --runner-node-filter: one copy of each entry per node of its runner
  // label whose name contains the filter.
  Result<std::vector<MatrixEntry>> FilterNodes(std::vector<MatrixEntry> in) const {
    std::vector<MatrixEntry> out;
    for (MatrixEntry& e : in) {
      const RunnerLabel* label = runners_.FindLabel(e.config->runner);
      if (label == nullptr) continue;
      for (const std::string& node : label->nodes) {
        if (node.find(*o_.runner_node_filter) == std::string::npos) continue;
        MatrixEntry copy = e;
        copy.runner = &node;
        out.push_back(std::move(copy));
      }
    }
    if (out.empty() && !in.empty()) {
      return Error{"no runner node matches --runner-node-filter '" + *o_.runner_node_filter +
                   "' for the selected configs (nodes come from the labels in " + runners_.file + ")"};
    }
    return out;
  }

  const MasterConfig& config_;
  const RunnerConfig& runners_;
  const SweepOptions& o_;
  std::vector<MatrixEntry> entries_;
};

}  // namespace

std::vector<int64_t> ExpandConcurrency(const SearchSpaceEntry& ss, bool fixed_seq_len, int64_t step,
                                       std::optional<int64_t> min_conc, std::optional<int64_t> max_conc) {
  std::vector<int64_t> out;
  if (ss.has_conc_list) {
    for (int64_t v : ss.conc_list) {
      if (min_conc && v < *min_conc) continue;
      out.push_back(v);
    }
    if (max_conc) {
      const bool had = !out.empty();
      std::erase_if(out, [&](int64_t v) { return v > *max_conc; });
      // fixed-seq-len lists entirely above --max-conc run at --max-conc.
      if (had && out.empty() && fixed_seq_len) out.push_back(*max_conc);
    }
    return out;
  }
  if (step < 2) step = 2;  // the command line rejects it; a step of 1 would never reach the end
  int64_t start = ss.conc_start, end = ss.conc_end;
  if (max_conc) end = std::min(end, *max_conc), start = std::min(start, *max_conc);
  if (min_conc) start = std::max(start, *min_conc);
  for (int64_t c = start; c <= end;) {
    out.push_back(c);
    if (c == end) break;
    c = c > end / step ? end : std::min(c * step, end);
  }
  return out;
}

std::string ExpName(const MatrixEntry& e) {
  const ConfigEntry& c = *e.config;
  const SearchSpaceEntry& s = *e.ss;
  switch (e.kind) {
    case EntryKind::kSingleFixed:
    case EntryKind::kMultiFixed:
      return c.model_prefix + "_" + SeqLenName(e.row->isl, e.row->osl);
    case EntryKind::kSingleAgentic: {
      std::string n = c.model_prefix + "_tp" + std::to_string(s.tp) + "_conc" + std::to_string(e.name_conc) + "_" + KvTag(s);
      if (s.spec_decoding != "none") n += "_spec-" + s.spec_decoding;
      return n;
    }
    case EntryKind::kMultiAgentic: {
      std::string n = c.model_prefix + "_p" + WorkerTag(s.prefill) + "_d" + WorkerTag(s.decode) + "_conc" +
                      std::to_string(e.name_conc);
      if (s.kv_offloading != "none") n += "_" + KvTag(s);
      return n;
    }
  }
  return c.model_prefix;
}

Result<std::vector<MatrixEntry>> GenerateMatrix(const MasterConfig& config, const RunnerConfig& runners,
                                                const SweepOptions& options) {
  return Generator(config, runners, options).Run();
}

}  // namespace ix
