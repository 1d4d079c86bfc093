#include "submitter/images_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include "core/process/process.h"
#include "submitter/sweep/slurm_cli.h"
#include "submitter/sweep/container_args.h"
#include "submitter/matrix_options.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_selection.h"

namespace ix {
namespace {

const char kUsage[] =
    "Usage: ixsubmit images list [--squash-dir DIR] (SELECTION | IMAGE...)\n"
    "       ixsubmit images import [--squash-dir DIR] [--partition P] [--account A] [--time T] [--dry-run]\n"
    "                              (SELECTION | IMAGE...)\n"
    "\n"
    "The container images of the config rows a sweep would run (SELECTION: the selection flags of\n"
    "`ixsubmit sweep`: --config-files FILE... [--config-keys KEY... | FILTERS] [--runner-config FILE])\n"
    "or the IMAGEs named, and their squash files DIR/<image with / : @ # as _>.sqsh, as\n"
    "InferenceX names them.\n"
    "  list     each image, whether its squash file is there, and the file\n"
    "  import   imports each missing squash file once, on one node, where enroot is:\n"
    "             srun --nodes=1 --ntasks=1 flock FILE.lock enroot import -o FILE docker://IMAGE\n"
    "           (the lock beside the file serialises concurrent imports of the same image)\n"
    "\n"
    "Options:\n"
    "  --squash-dir DIR  the site's squash directory (default $IX_SQUASH_DIR; import needs one);\n"
    "                    on storage the nodes share\n"
    "  --partition P  --account A  --time T   srun's, for the import steps\n"
    "  --dry-run         print the import commands, run nothing\n"
    "\n"
    "Exit status: 0 when done; 1 when an image failed (named on stderr); 2 on misuse.\n";

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// The distinct images `rest` names: a selection when it holds options,
// else image names. A bad image name is misuse; a bad config is an error.
Result<std::vector<std::string>> SelectedImages(const std::vector<std::string>& rest) {
  bool selection = false;
  for (const std::string& a : rest) selection = selection || (!a.empty() && a[0] == '-');
  if (selection) {
    const SweepSelection sel = ParseSweepSelection(rest);
    Result<MasterConfig> config = LoadMasterConfigFiles(sel.config_files);
    if (!config) return config.error();
    Result<MatrixBuckets> buckets = SelectEntries(sel, config.value(), false);
    if (!buckets) return buckets.error();
    const std::vector<std::string> keys = ConfigKeysOf(buckets.value());
    if (keys.empty()) return Error{"the selection has no entries, so no images"};
    return ImagesOfKeys(config.value(), keys);
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& image : rest) {
    if (Result<ImageRef> ref = ParseImageRef(image); !ref) throw Misuse{"argument IMAGE: " + ref.error().message};
    if (seen.insert(image).second) out.push_back(image);
  }
  if (out.empty()) {
    throw Misuse{"no images: give a selection (--config-files FILE... [--config-keys KEY...]) or IMAGE..."};
  }
  return out;
}

// Imports the squash files that are missing; the images that failed, each
// with why.
std::vector<std::string> Import(const std::vector<std::string>& images, const std::string& dir,
                                const SubmitSettings& srun, bool dry_run) {
  std::vector<std::string> failed;
  int imported = 0, there = 0;
  for (const std::string& image : images) {
    const std::string file = SquashPath(dir, image);
    if (PathExistsOnDisk(file)) {
      std::printf("%s: %s is there\n", image.c_str(), file.c_str());
      ++there;
      continue;
    }
    const std::vector<std::string> argv = ImportArgv(image, file, srun);
    std::printf("%s: importing into %s: %s\n", image.c_str(), file.c_str(), Joined(argv).c_str());
    std::fflush(stdout);
    if (dry_run) continue;
    // srun's own --time bounds an import; a large image takes many minutes.
    Result<CommandOutput> r = RunCommand(argv, CurrentEnvironment(), std::chrono::hours(24), true);
    if (!r) {
      failed.push_back(image + " (" + r.error().message + ")");
    } else if (r.value().ok() && PathExistsOnDisk(file)) {
      std::printf("%s: imported into %s\n", image.c_str(), file.c_str());
      ++imported;
    } else if (r.value().ok()) {
      failed.push_back(image + " (srun succeeded but " + file + " is not there: is " + dir +
                       " on storage the nodes share?)");
    } else if (PathExistsOnDisk(file) && r.value().err.find("File already exists") != std::string::npos) {
      // Another import held the lock and wrote the file meanwhile.
      std::printf("%s: %s was imported by another process while this one waited for its lock\n", image.c_str(),
                  file.c_str());
      ++there;
    } else {
      failed.push_back(image + " (srun " + r.value().Describe() + "; its output is above)");
    }
    std::fflush(stdout);
  }
  if (!dry_run) {
    std::printf("%zu image(s): %d imported, %d already there, %zu failed\n", images.size(), imported, there,
                failed.size());
  }
  return failed;
}

}  // namespace

std::vector<std::string> ImportArgv(const std::string& image, const std::string& squash_file, const SubmitSettings& s) {
  std::vector<std::string> a = {"srun", "--nodes=1", "--ntasks=1", "--job-name=ix-images-import"};
  if (!s.partition.empty()) a.push_back("--partition=" + s.partition);
  if (!s.account.empty()) a.push_back("--account=" + s.account);
  if (!s.time_limit.empty()) a.push_back("--time=" + s.time_limit);
  Result<ImageRef> ref = ParseImageRef(image);
  const std::string uri = "docker://" + (ref ? EnrootReference(image, ref.value()) : image);
  for (const std::string& x : {std::string("flock"), squash_file + ".lock", std::string("enroot"),
                               std::string("import"), std::string("-o"), squash_file, uri}) {
    a.push_back(x);
  }
  return a;
}

int RunImagesCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string sub = args[0];
  const std::string me = "ixsubmit images " + sub;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::optional<std::string> squash_flag;
  SubmitSettings srun;
  bool dry_run = false;
  std::vector<std::string> rest;
  std::vector<std::string> images;
  try {
    if (sub != "list" && sub != "import") throw Misuse{"unknown subcommand '" + sub + "'; subcommands: list, import"};
    for (size_t i = 1; i < args.size(); ++i) {
      const std::string a = args[i];
      const std::string name = a.substr(0, a.find('='));
      const bool import_only = name == "--partition" || name == "--account" || name == "--time" || a == "--dry-run";
      if (import_only && sub != "import") throw Misuse{"argument " + name + ": only with import"};
      if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
      if (name == "--squash-dir") squash_flag = TakeValue(args, i);
      else if (name == "--partition") srun.partition = TakeValue(args, i);
      else if (name == "--account") srun.account = TakeValue(args, i);
      else if (name == "--time") srun.time_limit = TakeValue(args, i);
      else if (a == "--dry-run") dry_run = true;
      else rest.push_back(a);
    }
    Result<std::vector<std::string>> selected = SelectedImages(rest);
    if (!selected) return std::cerr << me << ": " << selected.error().message << "\n", 1;
    images = selected.value();
  } catch (const Misuse& m) {
    std::cerr << me << ": error: " << m.message << "\nTry 'ixsubmit images --help'.\n";
    return 2;
  }
  Result<std::string> dir = ResolveSquashDir(squash_flag);
  if (!dir) return std::cerr << me << ": error: " << dir.error().message << "\n", 2;
  if (sub == "list") {
    for (const std::string& image : images) {
      if (dir.value().empty()) {
        std::printf("%-8s %s (no squash directory: Pyxis imports %s)\n", "-", image.c_str(),
                    EnrootReference(image, ParseImageRef(image).value()).c_str());
      } else {
        const std::string file = SquashPath(dir.value(), image);
        std::printf("%-8s %s %s\n", PathExistsOnDisk(file) ? "present" : "missing", image.c_str(), file.c_str());
      }
    }
    return 0;
  }
  if (dir.value().empty()) {
    std::cerr << me << ": error: no squash directory: give --squash-dir DIR or set IX_SQUASH_DIR\n";
    return 2;
  }
  const std::vector<std::string> failed = Import(images, dir.value(), srun, dry_run);
  for (const std::string& f : failed) std::cerr << me << ": failed: " << f << "\n";
  return failed.empty() ? 0 : 1;
}

}  // namespace ix
