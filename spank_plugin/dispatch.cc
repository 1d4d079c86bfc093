// The SPANK entry points of spank_inferencex.so. Like Pyxis, this file only
// routes each callback to the file of its context (srun_side.cc for srun,
// sbatch and salloc; slurmstepd_side.cc for the hooks that run inside
// slurmstepd, which in turn starts ix-stepd).
// Rules for code loaded into slurmstepd: hooks are extern "C", no exception
// crosses a hook, only the SPANK symbols are exported (spank_inferencex.map),
// and nothing happens at all unless an --inferencex-* option was given.
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

#include "spank_plugin/plugin_args.h"
#include "spank_plugin/srun_side.h"
#include "spank_plugin/slurmstepd_side.h"
#include "spank_plugin/step_options.h"

extern "C" {
extern const char plugin_name[] = "inferencex";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

// One plugin instance per process (srun, sbatch or slurmstepd).
struct PluginState {
  ix::PluginArgs args;
  std::string args_error;  // non-empty when plugstack.conf arguments are bad
  ix::StepOptions options;
  std::string option_error;
};
PluginState g_state;

enum OptionId { kArm = 1, kRecipe, kConc, kEvalOnly, kReadyTimeout, kPlacement, kKvOffload, kKvOffloadDramGb,
                kHangAfter };

// A numeric option's value: kept when it parsed (0), else refused with the
// parser's message (-1).
int SetNumber(const ix::Result<int64_t>& parsed, std::optional<int64_t>& field) {
  if (!parsed) {
    slurm_error("inferencex: %s", parsed.error().message.c_str());
    return -1;
  }
  field = parsed.value();
  return 0;
}

int OnOption(int val, const char* optarg, int /*remote*/) noexcept {
  try {
    const std::string value = optarg ? optarg : "";
    switch (val) {
      case kArm: g_state.options.arm = value; break;
      case kRecipe: g_state.options.recipe = value; break;
      case kEvalOnly: g_state.options.eval_only = true; break;
      case kPlacement: g_state.options.placement = value; break;
      case kKvOffload: g_state.options.kv_offload = value; break;
      case kKvOffloadDramGb: return SetNumber(ix::ParseKvOffloadDramGb(value), g_state.options.kv_offload_dram_gb);
      case kReadyTimeout: return SetNumber(ix::ParseReadyTimeout(value), g_state.options.ready_timeout_s);
      case kHangAfter: return SetNumber(ix::ParseHangAfter(value), g_state.options.hang_after_s);
      case kConc: return SetNumber(ix::ParseConcurrency(value), g_state.options.conc);
      default: return -1;
    }
    return 0;
  } catch (const std::exception& e) {
    slurm_error("inferencex: option: %s", e.what());
    return -1;
  } catch (...) {
    return -1;
  }
}

struct spank_option kOptions[] = {
    {const_cast<char*>("inferencex-arm"), const_cast<char*>("ARM"),
     const_cast<char*>("InferenceX: parallelism arm of the recipe (tp4, tep4, dep4, ...)"), 1, kArm,
     OnOption},
    {const_cast<char*>("inferencex-recipe"), const_cast<char*>("NAME"),
     const_cast<char*>("InferenceX: serving recipe (e.g. dsv41flash-fp4-b300-vllm)"), 1, kRecipe,
     OnOption},
    {const_cast<char*>("inferencex-conc"), const_cast<char*>("N"),
     const_cast<char*>("InferenceX: client concurrency of the benchmark point"), 1, kConc, OnOption},
    {const_cast<char*>("inferencex-eval-only"), nullptr,
     const_cast<char*>("InferenceX: serve the eval-only (accuracy) variant"), 0, kEvalOnly, OnOption},
    {const_cast<char*>("inferencex-ready-timeout"), const_cast<char*>("SECONDS"),
     const_cast<char*>("InferenceX: how long the server may take to become ready (default 3600)"), 1,
     kReadyTimeout, OnOption},
    {const_cast<char*>("inferencex-placement"), const_cast<char*>("strict|warn"),
     const_cast<char*>("InferenceX: refuse (strict, default) or only warn when NUMA/memory placement cannot be met"),
     1, kPlacement, OnOption},
    {const_cast<char*>("inferencex-kv-offload"), const_cast<char*>("TIER"),
     const_cast<char*>("InferenceX: KV offload tier of the recipe (none, vllm-simple, mooncake, ...; default none)"), 1,
     kKvOffload, OnOption},
    {const_cast<char*>("inferencex-kv-offload-dram-gb"), const_cast<char*>("GB"),
     const_cast<char*>("InferenceX: host DRAM of the KV offload tier for the step, in GB (TOTAL_CPU_DRAM_GB)"), 1,
     kKvOffloadDramGb, OnOption},
    {const_cast<char*>("inferencex-hang-after"), const_cast<char*>("SECONDS|off"),
     const_cast<char*>("InferenceX: end the step when a server is busy without progress this long "
                       "(1..86400; default: the recipe's hang.after; off: no hang detection)"),
     1, kHangAfter, OnOption},
};

// Runs `hook` only in slurmstepd for a step that uses the plugin, catching
// everything: no exception may cross into slurmstepd.
template <class Hook>
int RemoteHook(const char* name, Hook&& hook) {
  try {
    if (!g_state.options.Active() || spank_context() != S_CTX_REMOTE) return 0;
    return hook();
  } catch (const std::exception& e) {
    slurm_error("inferencex: internal error in %s: %s", name, e.what());
  } catch (...) {
    slurm_error("inferencex: internal error in %s", name);
  }
  return -1;
}

}  // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
  try {
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE) return 0;
    ix::Result<ix::PluginArgs> args = ix::ParsePluginArgs(std::vector<std::string>(av, av + ac));
    if (args) {
      g_state.args = args.value();
    } else {
      // Logged now; a step that uses the plugin fails on it later, while
      // other jobs keep running as if the plugin were not installed.
      g_state.args_error = args.error().message;
      slurm_error("inferencex: %s", g_state.args_error.c_str());
    }
    for (auto& opt : kOptions) {
      if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) {
        slurm_error("inferencex: cannot register --%s", opt.name);
        return -1;
      }
    }
    return 0;
  } catch (...) {
    slurm_error("inferencex: internal error in slurm_spank_init");
    return -1;
  }
}

int slurm_spank_init_post_opt(spank_t sp, int /*ac*/, char** /*av*/) {
  try {
    if (!g_state.options.Active()) return 0;
    const spank_context_t ctx = spank_context();
    if (!g_state.args_error.empty()) {
      slurm_error("inferencex: plugin misconfigured in plugstack.conf: %s",
                  g_state.args_error.c_str());
      return -1;
    }
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) {
      return ix::SrunInitPostOpt(g_state.args, g_state.options);
    }
    if (ctx == S_CTX_REMOTE) return ix::SlurmstepdInitPostOpt(sp, g_state.args, g_state.options);
    return 0;
  } catch (const std::exception& e) {
    slurm_error("inferencex: internal error: %s", e.what());
    return -1;
  } catch (...) {
    slurm_error("inferencex: internal error in slurm_spank_init_post_opt");
    return -1;
  }
}

int slurm_spank_task_init(spank_t sp, int /*ac*/, char** /*av*/) {
  return RemoteHook("task_init", [&] { return ix::SlurmstepdTaskInit(sp); });
}

int slurm_spank_task_exit(spank_t sp, int /*ac*/, char** /*av*/) {
  return RemoteHook("task_exit", [&] { return ix::SlurmstepdTaskExit(sp); });
}

int slurm_spank_exit(spank_t sp, int /*ac*/, char** /*av*/) {
  return RemoteHook("exit", [&] { return ix::SlurmstepdExit(sp, g_state.args); });
}

}  // extern "C"
