#include "submitter/matrix_options.h"

#include <cerrno>
#include <cstdlib>

namespace ix {
namespace po = boost::program_options;

int64_t ParseInt(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) {
    throw Misuse{"argument --" + option + ": invalid int value: '" + text + "'"};
  }
  return v;
}

int64_t ParsePositive(const std::string& option, const std::string& text) {
  const int64_t v = ParseInt(option, text);
  if (v <= 0) throw Misuse{"argument --" + option + ": must be a positive integer, got " + text};
  return v;
}

std::string TakeValue(const std::vector<std::string>& args, size_t& i) {
  const std::string& a = args[i];
  const size_t eq = a.find('=');
  if (eq != std::string::npos) return a.substr(eq + 1);
  if (i + 1 >= args.size()) throw Misuse{"argument " + a + ": expected one argument"};
  return args[++i];
}

namespace {

void CheckChoice(const std::string& option, const std::string& v, std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) {
    if (v == c) return;
    list += (list.empty() ? "'" : ", '") + std::string(c) + "'";
  }
  throw Misuse{"argument --" + option + ": invalid choice: '" + v + "' (choose from " + list + ")"};
}

void Exclusive(const Parsed& p, const std::string& a, const std::string& b) {
  if (!p.Has(a) || !p.Has(b)) return;
  // argparse names the later option.
  size_t ia = 0, ib = 0;
  for (size_t i = 0; i < p.order.size(); ++i) {
    if (p.order[i] == a) ia = i;
    if (p.order[i] == b) ib = i;
  }
  const std::string& first = ia < ib ? a : b;
  const std::string& second = ia < ib ? b : a;
  throw Misuse{"argument --" + second + ": not allowed with argument --" + first};
}

}  // namespace

po::options_description MatrixOptions(bool full, bool bucket_flags) {
  po::options_description o;
  auto list = [] { return po::value<std::vector<std::string>>()->multitoken(); };
  auto one = [] { return po::value<std::string>(); };
  o.add_options()
      ("config-files", list()->value_name("FILE..."), "master-config YAML files (keys must be unique across them)")
      ("runner-config", one()->value_name("FILE"), "runners.yaml: runner labels, nodes and hardware")
      ("no-evals", po::bool_switch(), "no eval marking (agentic entries carry no run-eval)")
      ("evals-only", po::bool_switch(), "only the entries that run evals")
      ("all-evals", po::bool_switch(), "every eligible entry runs evals (output is evals only)")
      ("eval-per-topology", po::bool_switch(),
       "agentic evals per (model, runner, framework, precision, tp, ep, dp-attn) instead of one per "
       "(model, runner, framework, precision); off by default (the reference's policy)")
      ("runner-node-filter", one()->value_name("TEXT"),
       "one entry per node of the runner label whose name contains TEXT")
      ("scenario-type", list()->value_name("TYPE..."), "fixed-seq-len and/or agentic-coding");
  if (full) {
    o.add_options()
        ("model-prefix", list()->value_name("PREFIX..."), "config keys starting with one of these")
        ("precision", list()->value_name("P..."), "configs of these precisions")
        ("framework", list()->value_name("F..."), "configs of these frameworks")
        ("runner-type", list()->value_name("LABEL..."), "configs on these runner labels")
        ("seq-lens", list()->value_name("S..."), "fixed-seq-len rows of these lengths: 1k1k, 1k8k, 8k1k")
        ("step-size", one()->value_name("N"), "factor of the geometric concurrency ranges (default 2)")
        ("min-conc", one()->value_name("N"), "lowest concurrency")
        ("max-conc", one()->value_name("N"), "highest concurrency")
        ("max-tp", one()->value_name("N"), "skip entries with a larger tp")
        ("max-ep", one()->value_name("N"), "skip entries with a larger ep")
        ("single-node", po::bool_switch(), "single-node configs only")
        ("multi-node", po::bool_switch(), "multinode configs only");
  } else {
    o.add_options()
        ("config-keys", list()->value_name("KEY..."), "config keys; *, ? and [...] patterns select several")
        ("conc", list()->value_name("N..."), "run every entry at these concurrencies instead");
  }
  if (bucket_flags) {
    o.add_options()
        ("buckets", po::bool_switch(), "print the bucketed form the sweep consumes instead of the matrix")
        ("trim-conc", po::bool_switch(), "with --buckets: lowest concurrency per config (the sweep-enabled mode)")
        ("canary", po::bool_switch(), "with --buckets: choose the canary job and print {canary, remaining}");
  }
  o.add_options()("help,h", "show this help");
  return o;
}

Parsed ParseOptions(const std::vector<std::string>& args, const po::options_description& opts) {
  po::parsed_options parsed(&opts);
  try {
    parsed = po::command_line_parser(args).options(opts).run();
  } catch (const po::unknown_option& e) {
    throw Misuse{"unrecognized arguments: " + e.get_option_name()};
  } catch (const po::ambiguous_option& e) {
    std::string alts;
    for (const std::string& a : e.alternatives()) alts += (alts.empty() ? "--" : ", --") + a;
    throw Misuse{"ambiguous option: " + e.get_option_name() + " could match " + alts};
  } catch (const po::invalid_command_line_syntax& e) {
    throw Misuse{"argument " + e.get_option_name() + ": expected " +
                 (e.kind() == po::invalid_command_line_syntax::missing_parameter ? "at least one argument"
                                                                                 : "no argument")};
  } catch (const po::too_many_positional_options_error&) {
    std::string rest;
    for (const std::string& a : args) {
      if (a.empty() || a[0] != '-') rest += (rest.empty() ? "" : " ") + a;
    }
    throw Misuse{"unrecognized arguments: " + rest};
  } catch (const po::error& e) {
    throw Misuse{e.what()};
  }
  Parsed p;
  for (const po::option& o : parsed.options) {
    if (o.position_key != -1 || o.unregistered) {
      throw Misuse{"unrecognized arguments: " + (o.original_tokens.empty() ? o.string_key : o.original_tokens[0])};
    }
    if (!p.Has(o.string_key)) p.order.push_back(o.string_key);
    p.last[o.string_key] = o.value;
  }
  return p;
}

SweepOptions ToSweepOptions(const Parsed& p, bool full) {
  SweepOptions o;
  o.command = full ? SweepOptions::Command::kFullSweep : SweepOptions::Command::kTestConfig;
  std::vector<std::string> missing;
  for (const char* r : {"config-files", "runner-config"}) {
    if (!p.Has(r)) missing.push_back(std::string("--") + r);
  }
  if (!full && !p.Has("config-keys")) missing.push_back("--config-keys");
  if (!missing.empty()) {
    std::string m;
    for (const std::string& x : missing) m += (m.empty() ? "" : ", ") + x;
    throw Misuse{"the following arguments are required: " + m};
  }
  Exclusive(p, "no-evals", "evals-only");
  Exclusive(p, "no-evals", "all-evals");
  if (full) Exclusive(p, "single-node", "multi-node");
  o.evals = p.Has("all-evals")    ? EvalMode::kAll
            : p.Has("evals-only") ? EvalMode::kOnly
            : p.Has("no-evals")   ? EvalMode::kNone
                                  : EvalMode::kDefault;
  o.eval_per_topology = p.Has("eval-per-topology");
  if (auto f = p.One("runner-node-filter")) o.runner_node_filter = *f;
  if (p.Has("scenario-type")) {
    for (const std::string& s : p.Values("scenario-type")) {
      CheckChoice("scenario-type", s, {"fixed-seq-len", "agentic-coding"});
      o.scenario_types.push_back(s);
    }
  }
  for (const char* dep : {"trim-conc", "canary"}) {
    if (p.Has(dep) && !p.Has("buckets")) throw Misuse{std::string("argument --") + dep + ": only with --buckets"};
  }
  if (!full) {
    for (const char* f : {"model-prefix", "precision", "framework", "runner-type", "seq-lens", "step-size", "min-conc",
                          "max-conc", "max-tp", "max-ep", "single-node", "multi-node"}) {
      if (p.Has(f)) throw Misuse{std::string("argument --") + f + ": not allowed with argument --config-keys"};
    }
  }
  if (full) {
    auto strings = [&](const char* name, std::vector<std::string>& out) {
      if (p.Has(name)) out = p.Values(name);
    };
    strings("model-prefix", o.model_prefixes);
    strings("precision", o.precisions);
    strings("framework", o.frameworks);
    strings("runner-type", o.runner_types);
    if (p.Has("seq-lens")) {
      for (const std::string& s : p.Values("seq-lens")) {
        std::pair<int64_t, int64_t> sl;
        CheckChoice("seq-lens", s, {"1k1k", "1k8k", "8k1k"});
        ParseSeqLen(s, sl);
        o.seq_lens.push_back(sl);
      }
    }
    if (auto v = p.One("step-size")) {
      o.step_size = ParseInt("step-size", *v);
      if (o.step_size < 2) throw Misuse{"argument --step-size: must be at least 2, got " + *v};
    }
    if (auto v = p.One("min-conc")) o.min_conc = ParsePositive("min-conc", *v);
    if (auto v = p.One("max-conc")) o.max_conc = ParsePositive("max-conc", *v);
    if (auto v = p.One("max-tp")) o.max_tp = ParsePositive("max-tp", *v);
    if (auto v = p.One("max-ep")) o.max_ep = ParsePositive("max-ep", *v);
    if (o.min_conc && o.max_conc && *o.min_conc > *o.max_conc) {
      throw Misuse{"argument --max-conc: must be >= --min-conc (" + std::to_string(*o.min_conc) + "), got " +
                   std::to_string(*o.max_conc)};
    }
    o.single_node = p.Has("single-node");
    o.multi_node = p.Has("multi-node");
  } else {
    o.config_keys = p.Values("config-keys");
    if (p.Has("conc")) {
      for (const std::string& v : p.Values("conc")) o.conc.push_back(ParsePositive("conc", v));
    }
  }
  return o;
}

}  // namespace ix
