#include "pyxis_options.h"

#include "core/base/text.h"

namespace ixfake::pyxis {
namespace {

enum OptionId {
  kImage = 1, kMounts, kWorkdir, kName, kSave, kMountHome, kNoMountHome, kRemapRoot, kNoRemapRoot,
  kEntrypoint, kNoEntrypoint, kEntrypointLog, kWritable, kReadonly, kEnv, kUnshare
};

// One option's value into g.args; "" or why it is refused.
std::string ApplyOption(int val, const std::string& v) {
  std::string err;
  switch (val) {
    case kImage: g.args.image = v; break;
    case kMounts:  // Slurm may deliver an option twice: the last value wins
      g.args.mounts.clear();
      err = ParseMounts(v, g.args.mounts);
      break;
    case kWorkdir:
      if (v.empty() || v.front() != '/') err = "--container-workdir must be an absolute path";
      g.args.workdir = v;
      break;
    case kName:
      if (v.empty() || v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                           std::string::npos)
        err = "--container-name=" + v + ": use letters, digits, '.', '_' and '-' only";
      g.args.name = v;
      break;
    case kRemapRoot: g.args.remap_root = true; break;
    case kNoRemapRoot: g.args.remap_root = false; break;
    case kWritable: g.args.readonly = false; break;
    case kReadonly: g.args.readonly = true; break;
    case kEnv:
      g.args.keep_env.clear();
      for (std::string_view n : ix::Split(v, ',')) g.args.keep_env.emplace_back(n);
      break;
    default: break;  // accepted, not reproduced (README.md)
  }
  return err;
}

int OnOption(int val, const char* optarg, int /*remote*/) noexcept {
  try {
    const std::string err = ApplyOption(val, optarg ? optarg : "");
    if (err.empty()) return 0;
    g.option_error = err;
    slurm_error("fake-pyxis: %s", err.c_str());
    return -1;
  } catch (...) {
    slurm_error("fake-pyxis: internal error while parsing an option");
    return -1;
  }
}

char* C(const char* s) { return const_cast<char*>(s); }
#define IX_OPT(name, arginfo, usage, has_arg, id) {C(name), C(arginfo), C("[fake pyxis] " usage), has_arg, id, OnOption}
struct spank_option kOptions[] = {
    IX_OPT("container-image", "DIR", "rootfs directory of the container (the double takes no registry images)", 1,
           kImage),
    IX_OPT("container-mounts", "SRC:DST[:FLAGS][,SRC:DST...]", "bind mount[s] inside the container (flags: ro)", 1,
           kMounts),
    IX_OPT("container-workdir", "PATH", "working directory inside the container", 1, kWorkdir),
    IX_OPT("container-name", "NAME", "keep the container for later steps of the job", 1, kName),
    IX_OPT("container-save", "PATH", "accepted, ignored", 1, kSave),
    IX_OPT("container-mount-home", nullptr, "accepted, ignored", 0, kMountHome),
    IX_OPT("no-container-mount-home", nullptr, "do not mount home (the double never does)", 0, kNoMountHome),
    IX_OPT("container-remap-root", nullptr, "be root inside the container (user namespace)", 0, kRemapRoot),
    IX_OPT("no-container-remap-root", nullptr, "keep your uid inside the container", 0, kNoRemapRoot),
    IX_OPT("container-entrypoint", nullptr, "accepted, ignored (no entrypoint is run)", 0, kEntrypoint),
    IX_OPT("no-container-entrypoint", nullptr, "do not run the entrypoint (the double never does)", 0,
           kNoEntrypoint),
    IX_OPT("container-entrypoint-log", nullptr, "accepted, ignored", 0, kEntrypointLog),
    IX_OPT("container-writable", nullptr, "writable container filesystem (default)", 0, kWritable),
    IX_OPT("container-readonly", nullptr, "read-only container filesystem", 0, kReadonly),
    IX_OPT("container-env", "NAME[,NAME...]", "variables that keep the host value over the image's", 1, kEnv),
    IX_OPT("container-unshare", "NS[,NS...]", "accepted, ignored", 1, kUnshare),
};
#undef IX_OPT

}  // namespace

std::string RegisterOptions(spank_t sp) {
  for (auto& opt : kOptions) {
    if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) return std::string("cannot register --") + opt.name;
  }
  return "";
}

std::string ParsePluginArgs(int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    const std::string a = av[i];
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "runtime_dir" || key == "runtime_path") {
      if (value.empty() || value.front() != '/') return a + ": must be an absolute path";
      g.runtime_dir = value;
    } else if (key != "container_scope" && key != "remap_root" && key != "execute_entrypoint" &&
               key != "container_image_save" && key != "sbatch_support" && key != "use_enroot_load") {
      return "unknown plugstack.conf argument '" + a + "' (known: runtime_dir=DIR)";
    }
  }
  return "";
}

std::string ParseMounts(const std::string& value, std::vector<MountSpec>& out) {
  for (std::string_view item_view : ix::Split(value, ',')) {
    const std::string item(item_view);
    const std::vector<std::string_view> parts = ix::Split(item, ':');
    if (parts.size() > 3 || parts[0].empty()) return "--container-mounts: bad entry '" + item + "'";
    MountSpec m{std::string(parts[0]), std::string(parts.size() > 1 ? parts[1] : parts[0]), false};
    if (m.src.front() != '/' || m.dst.empty() || m.dst.front() != '/')
      return "--container-mounts: '" + item + "': source and destination must be absolute paths";
    if (parts.size() == 3) {
      for (std::string_view flag : ix::Split(parts[2], '+')) m.readonly = flag == "ro" || (m.readonly && flag != "rw");
    }
    out.push_back(m);
  }
  return "";
}

}  // namespace ixfake::pyxis
