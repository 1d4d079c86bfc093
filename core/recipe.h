// Recipe: how one model/SKU/framework is served, loaded from recipes/*.yaml
// (schema in docs/RECIPES.md). A recipe holds command templates for the
// engine and, optionally, a router; the client environment; host-memory
// needs; and the arms (tp4, tep4, dep4, ...) that vary them.
//
// Invariants after a successful load: every `${NAME}` in every template an
// arm uses names something that exists for that arm (a builtin, a recipe
// variable, an arm variable, one of the arm's ports or the CUDA-graph capture
// variable); every fragment the engine splices is defined by every arm; arm
// variables do not reference themselves in a cycle; tp x dp == gpus.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/template.h"

namespace ix {

// Where something was written, for messages: "file:line:col" and field path.
struct SourceRef {
  std::string where;
  std::string field;
  std::string Describe() const { return where + ": field '" + field + "'"; }
};

// A template together with where it was written.
struct LocatedTemplate {
  Template tmpl;
  SourceRef ref;
};

// One element of an argv template. kText renders to exactly one argument;
// kSplice inserts the arm's fragment of that name (zero or more arguments);
// kWhen inserts `args` only when recipe variable `when` is non-empty.
struct ArgTemplate {
  enum class Kind { kText, kSplice, kWhen };
  Kind kind = Kind::kText;
  LocatedTemplate text;                 // kText
  std::string fragment;                 // kSplice
  std::string when;                     // kWhen
  std::vector<LocatedTemplate> args;    // kWhen
  SourceRef ref;
};

// NAME=template, in written order.
struct EnvTemplate {
  std::string name;
  LocatedTemplate value;
};

// A readiness check: an HTTP GET that must answer 200 (kHttpOk), or answer
// 200 with an OpenAI model list holding at least one model (kModelsNonEmpty).
struct ReadinessTemplate {
  enum class Kind { kHttpOk, kModelsNonEmpty };
  Kind kind;
  LocatedTemplate url;
};

// A process the step runs (the engine, the router).
struct ProcessTemplate {
  std::string name;
  std::string log;  // file name in the step's result directory
  std::vector<ArgTemplate> argv;
  std::vector<EnvTemplate> env;
  std::vector<ReadinessTemplate> readiness;
};

// A recipe variable: a default, an optional eval-only value, and whether
// `--set NAME=VALUE` may override it. Values are literal (no references).
struct RecipeVariable {
  std::string name;
  std::string value;
  std::optional<std::string> eval_only_value;
  std::string doc;
};

// The CUDA-graph capture size rule: per-rank batch = CONC x multiplier / DP
// (must be whole), capture = smallest power of two >= batch x
// tokens_per_request, capped at `max`. The multiplier is per arm.
struct CaptureRule {
  std::string variable;
  int64_t tokens_per_request = 1;
  int64_t max = 0;
};

// Host DRAM a step needs, per DP rank, per GPU or once per step.
struct HostMemoryNeed {
  enum class Per { kDpRank, kGpu, kStep };
  std::string name;
  Per per = Per::kStep;
  uint64_t bytes = 0;
  std::string doc;
};
const char* PerName(HostMemoryNeed::Per per);

// An arm: one parallelism layout.
struct Arm {
  std::string name;
  int64_t gpus = 0, tp = 0, ep = 0, dp = 0;
  bool router = false;
  int64_t capture_batch_multiplier = 1;
  std::vector<std::string> ports;  // leased, in order
  std::vector<std::pair<std::string, LocatedTemplate>> vars;
  std::vector<std::pair<std::string, std::vector<LocatedTemplate>>> fragments;
  std::vector<EnvTemplate> engine_env;  // added to (or replacing) the engine's
  std::vector<EnvTemplate> client_env;  // added to (or replacing) the client's
  std::string where;
};

struct Recipe {
  std::string file;
  std::string name;
  std::string description;
  std::vector<std::string> serves;  // InferenceX config keys this recipe runs
  std::vector<RecipeVariable> variables;
  std::optional<CaptureRule> capture;
  std::vector<HostMemoryNeed> host_memory;
  ProcessTemplate engine;
  std::optional<ProcessTemplate> router;
  std::vector<EnvTemplate> client_env;
  std::vector<Arm> arms;

  const Arm* FindArm(const std::string& name) const;
  std::vector<std::string> ArmNames() const;
  const RecipeVariable* FindVariable(const std::string& name) const;
};

// Names every arm can use without declaring them.
const std::vector<std::string>& BuiltinVariables();

Result<Recipe> LoadRecipeFile(const std::string& path);
Result<Recipe> LoadRecipeString(const std::string& text, const std::string& name);

// Recipe names available in `dir` (file stems of *.yaml), sorted.
std::vector<std::string> ListRecipes(const std::string& dir);
// Loads `<dir>/<name>.yaml`; an unknown or malformed name lists the choices.
Result<Recipe> LoadRecipeByName(const std::string& dir, const std::string& name);

}  // namespace ix
