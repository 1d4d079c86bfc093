#include "submitter/sweep/container_args.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "core/process/process.h"
#include "submitter/sweep/slurm_cli.h"
#include "submitter/sweep_command.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/testing_env.h"

namespace ix {
namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const char* const kTricky[] = {
    "vllm/vllm-openai:v0.11.0",
    "nvcr.io/nvidia/vllm:25.09-py3@sha256:ab",
    "nvcr.io#nvidia/vllm:25.09-py3",
    "localhost:5000/team/img:1.0",
    "lmsysorg/sglang:nightly-dev-cu13-20260628-da802ddc",
    "ubuntu",
};

TEST(SquashFileName, IsInferenceXsSedMapping) {
  EXPECT_EQ(SquashFileName("vllm/vllm-openai:v0.11.0"), "vllm_vllm-openai_v0.11.0.sqsh");
  EXPECT_EQ(SquashFileName("nvcr.io/nvidia/vllm:25.09-py3@sha256:ab"), "nvcr.io_nvidia_vllm_25.09-py3_sha256_ab.sqsh");
  EXPECT_EQ(SquashFileName("nvcr.io#nvidia/vllm:25.09-py3"), "nvcr.io_nvidia_vllm_25.09-py3.sqsh");
  EXPECT_EQ(SquashPath("/sq", "ubuntu"), "/sq/ubuntu.sqsh");
  // The same names as the launch scripts' `echo "$IMAGE" | sed 's/[\/:@#]/_/g'`.
  for (const char* image : kTricky) {
    Result<CommandOutput> r = RunCommand({"sh", "-c", "echo \"$1\" | sed 's/[\\/:@#]/_/g'", "sh", image},
                                         CurrentEnvironment());
    ASSERT_TRUE(r.ok() && r.value().ok()) << image;
    std::string sed = r.value().out;
    while (!sed.empty() && sed.back() == '\n') sed.pop_back();
    EXPECT_EQ(SquashFileName(image), sed + ".sqsh") << image;
  }
}

TEST(ImageRef, SplitsAsDockerAndEnrootRead) {
  Result<ImageRef> a = ParseImageRef("nvcr.io/nvidia/vllm:25.09-py3@sha256:ab");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a.value().registry, "nvcr.io");
  EXPECT_EQ(a.value().repository, "nvidia/vllm");
  EXPECT_EQ(a.value().tag, "25.09-py3");
  EXPECT_EQ(a.value().digest, "sha256:ab");
  Result<ImageRef> b = ParseImageRef("vllm/vllm-openai:v0.11.0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value().registry, "");
  EXPECT_EQ(b.value().repository, "vllm/vllm-openai");
  Result<ImageRef> c = ParseImageRef("localhost:5000/team/img");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c.value().registry, "localhost:5000");
  EXPECT_EQ(c.value().tag, "");
  Result<ImageRef> d = ParseImageRef("nvcr.io#nvidia/vllm:25.09-py3");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_TRUE(d.value().enroot_form);
  EXPECT_EQ(d.value().registry, "nvcr.io");
  for (const char* image : kTricky) EXPECT_TRUE(ParseImageRef(image).ok()) << image;
}

TEST(ImageRef, RefusesWhatCannotBeAReferenceAndSaysWhy) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "it is empty"},
      {"vllm/vllm openai:v1", "holds byte 0x20"},
      {"vllm/$(id):v1", "holds '$'"},
      {"img;rm -rf /", "holds ';'"},
      {"Vllm/vllm-openai:v1", "name component 'Vllm' must be lowercase"},
      {"a//b", "name component ''"},
      {"vllm/vllm-openai:", "tag ''"},
      {"vllm/vllm-openai:-x", "tag '-x'"},
      {"vllm/vllm-openai@sha256:xyz", "digest 'sha256:xyz'"},
      {"nvcr.io/", "it names no image"},
      {"a#b#c", "more than one '#'"},
      {"bad_host_#img", "registry 'bad_host_'"},
  };
  for (const auto& [image, why] : bad) {
    Result<ImageRef> r = ParseImageRef(image);
    ASSERT_FALSE(r.ok()) << image;
    EXPECT_TRUE(Contains(r.error().message, why)) << image << ": " << r.error().message;
    EXPECT_TRUE(Contains(r.error().message, "expected [REGISTRY/]NAME[:TAG][@DIGEST]")) << r.error().message;
  }
}

TEST(ImageRef, EnrootReferenceIsWhatEnrootParses) {
  // image as written -> what enroot's docker:// (and Pyxis) get.
  const std::pair<const char*, const char*> cases[] = {
      {"vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.11.0"},
      {"nvcr.io/nvidia/vllm:25.09-py3", "nvcr.io#nvidia/vllm:25.09-py3"},
      {"nvcr.io/nvidia/vllm:25.09-py3@sha256:ab", "nvcr.io#nvidia/vllm:sha256:ab"},
      {"lmsysorg/sglang:v0.5.16@sha256:ab", "registry-1.docker.io#lmsysorg/sglang:sha256:ab"},
      {"ubuntu@sha256:ab", "registry-1.docker.io#library/ubuntu:sha256:ab"},
      {"nvcr.io#nvidia/vllm:1", "nvcr.io#nvidia/vllm:1"},
  };
  for (const auto& [image, want] : cases) {
    EXPECT_EQ(EnrootReference(image, ParseImageRef(image).value()), want) << image;
  }
}

TEST(ContainerSrunArgs, SquashFileWhenThereElseTheImageAndTheMounts) {
  ContainerSettings s;
  s.enabled = true;
  s.squash_dir = "/sq";
  const std::string image = "nvcr.io/nvidia/vllm:25.09-py3@sha256:ab";
  const std::set<std::string> files = {"/sq/nvcr.io_nvidia_vllm_25.09-py3_sha256_ab.sqsh"};
  auto there = [&](const std::string& p) { return files.count(p) != 0; };
  auto nowhere = [](const std::string&) { return false; };
  EXPECT_EQ(ContainerSrunArgs(s, image, "/models/m", "/sw/results/3", there),
            (std::vector<std::string>{"--container-image=/sq/nvcr.io_nvidia_vllm_25.09-py3_sha256_ab.sqsh",
                                      "--container-mounts=/models/m:/models/m,/sw/results/3:/sw/results/3",
                                      "--no-container-mount-home", "--container-workdir=/sw/results/3",
                                      "--no-container-entrypoint"}));
  // No squash file: the image, as Pyxis hands it to enroot.
  EXPECT_EQ(ContainerSrunArgs(s, image, "/models/m", "/r", nowhere)[0],
            "--container-image=nvcr.io#nvidia/vllm:sha256:ab");
  s.squash_dir.clear();
  EXPECT_EQ(ContainerSrunArgs(s, "vllm/vllm-openai:v0.11.0", "", "/r", there)[0],
            "--container-image=vllm/vllm-openai:v0.11.0");
  // No model path (or one that is not a path): the result directory only.
  EXPECT_EQ(ContainerSrunArgs(s, "ubuntu", "", "/r", there)[1], "--container-mounts=/r:/r");
  EXPECT_EQ(ContainerSrunArgs(s, "ubuntu", "deepseek-ai/X", "/r", there)[1], "--container-mounts=/r:/r");
  // The site's model directory replaces the recipe's path.
  s.model_dir = "/data/models";
  EXPECT_EQ(ContainerSrunArgs(s, "ubuntu", "/models/m", "/r", there)[1],
            "--container-mounts=/data/models:/data/models,/r:/r");
  for (const std::string& a : ContainerSrunArgs(s, "ubuntu", "/models/m", "/r", there)) {
    EXPECT_NE(a.rfind("--container-name", 0), 0u) << a;
  }
}

SweepManifest OneEntrySweep() {
  SweepManifest m{.sweep_id = "sw-t", .sweep_dir = "/sw", .client = {"aiperf", "profile", "--x"}};
  const PlannedEntry e{.index = 2, .recipe = "r", .arm = "dep4", .conc = 64, .gpus = 4,
                       .image = "vllm/vllm-openai:v0.11.0", .model_path = "/models/m"};
  m.plan.entries = {PlannedEntry{}, PlannedEntry{}, e};
  return m;
}

TEST(StepSrunArgv, ContainerByDefaultHostWithNoContainer) {
  SweepManifest m = OneEntrySweep();
  auto nowhere = [](const std::string&) { return false; };
  const std::vector<std::string> host = {"srun", "--ntasks=1", "--gres=gpu:4", "--inferencex-recipe=r",
                                         "--inferencex-arm=dep4", "--inferencex-conc=64", "aiperf", "profile", "--x"};
  EXPECT_EQ(StepSrunArgv(m, m.plan.entries[2], nowhere, m.client), host);  // enabled = false: --no-container
  m.container.enabled = true;
  EXPECT_EQ(StepSrunArgv(m, m.plan.entries[2], nowhere, m.client),
            (std::vector<std::string>{"srun", "--ntasks=1", "--gres=gpu:4",
                                      "--container-image=vllm/vllm-openai:v0.11.0",
                                      "--container-mounts=/models/m:/models/m,/sw/results/2:/sw/results/2",
                                      "--no-container-mount-home", "--container-workdir=/sw/results/2",
                                      "--no-container-entrypoint", "--inferencex-recipe=r", "--inferencex-arm=dep4",
                                      "--inferencex-conc=64", "aiperf", "profile", "--x"}));
  // Results on the node: the container mounts and works in the node's
  // directory, where IX_RESULT_DIR points.
  m.stream.node_result_dir = "/local";
  m.sweep_id = "sw-1";
  const std::vector<std::string> node = StepSrunArgv(m, m.plan.entries[2], nowhere, m.client);
  EXPECT_EQ(node[4], "--container-mounts=/models/m:/models/m,/local/sw-1/2:/local/sw-1/2");
  EXPECT_EQ(node[6], "--container-workdir=/local/sw-1/2");
  m.stream.node_result_dir.clear();
  // An entry without an image runs on the host.
  m.plan.entries[2].image.clear();
  EXPECT_EQ(StepSrunArgv(m, m.plan.entries[2], nowhere, m.client), host);
}

// A row with a KV offload backend: the plugin gets its tier and the DRAM
// the matrix gave it.
TEST(StepSrunArgv, TheRowsKvOffloadTierAndItsDram) {
  SweepManifest m = OneEntrySweep();
  PlannedEntry& e = m.plan.entries[2];
  e.entry_json = R"({"kv-offloading":"dram","total-cpu-dram-gb":1424,"kv-offload-backend":{"name":"vllm-simple"}})";
  const std::vector<std::string> argv = StepSrunArgv(m, e, [](const std::string&) { return false; }, m.client);
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 3, argv.begin() + 8),
            (std::vector<std::string>{"--inferencex-recipe=r", "--inferencex-arm=dep4", "--inferencex-conc=64",
                                      "--inferencex-kv-offload=vllm-simple", "--inferencex-kv-offload-dram-gb=1424"}));
  e.entry_json = R"({"kv-offloading":"none","total-cpu-dram-gb":0})";
  EXPECT_EQ(StepSrunArgv(m, e, [](const std::string&) { return false; }, m.client).size(), argv.size() - 2);
}

// --hang-after of the sweep: every step gets it, after the entry's options.
TEST(StepSrunArgv, TheSweepsHangAfter) {
  SweepManifest m = OneEntrySweep();
  const auto nowhere = [](const std::string&) { return false; };
  const std::vector<std::string> plain = StepSrunArgv(m, m.plan.entries[2], nowhere, m.client);
  m.hang_after = "off";
  std::vector<std::string> off = StepSrunArgv(m, m.plan.entries[2], nowhere, m.client);
  ASSERT_EQ(off.size(), plain.size() + 1);
  EXPECT_EQ(off[off.size() - m.client.size() - 1], "--inferencex-hang-after=off");
}

TEST(ContainerSettings, SquashAndModelDirsFromFlagsOrEnvironment) {
  const std::string dir = ::testing::TempDir() + "/squash-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ScopedEnv no_squash("IX_SQUASH_DIR", nullptr);
  ScopedEnv no_model("IX_MODEL_DIR", nullptr);
  Result<ContainerSettings> none = ResolveContainerSettings(true, std::nullopt, std::nullopt);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().enabled);
  Result<ContainerSettings> plain = ResolveContainerSettings(false, std::nullopt, std::nullopt);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain.value().enabled);
  EXPECT_EQ(plain.value().squash_dir, "");
  Result<ContainerSettings> flag = ResolveContainerSettings(false, dir + "/", std::string("/data//models/"));
  ASSERT_TRUE(flag.ok()) << flag.error().message;
  EXPECT_EQ(flag.value().squash_dir, std::filesystem::path(dir).lexically_normal().string());
  EXPECT_EQ(flag.value().model_dir, "/data/models");
  {
    ScopedEnv env("IX_SQUASH_DIR", dir.c_str());
    ScopedEnv model("IX_MODEL_DIR", "/m");
    Result<ContainerSettings> e = ResolveContainerSettings(false, std::nullopt, std::nullopt);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e.value().model_dir, "/m");
    EXPECT_FALSE(e.value().squash_dir.empty());
  }
  // Bad input names the option (or variable) and what is allowed.
  Result<ContainerSettings> missing = ResolveContainerSettings(false, dir + "/nope", std::nullopt);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.error().message, "--squash-dir " + dir + "/nope: no such directory"))
      << missing.error().message;
  {
    ScopedEnv env("IX_SQUASH_DIR", "/no/such/dir");
    Result<ContainerSettings> e = ResolveContainerSettings(false, std::nullopt, std::nullopt);
    ASSERT_FALSE(e.ok());
    EXPECT_TRUE(Contains(e.error().message, "IX_SQUASH_DIR=/no/such/dir: no such directory")) << e.error().message;
  }
  Result<ContainerSettings> comma = ResolveContainerSettings(false, std::nullopt, std::string("/a,b"));
  ASSERT_FALSE(comma.ok());
  EXPECT_TRUE(Contains(comma.error().message, "--model-dir '/a,b': holds ',' or ':'")) << comma.error().message;
  std::filesystem::remove_all(dir);
}

const char kRow[] =
    "k1:\n"
    "  image: IMAGE\n"
    "  model: org/model\n"
    "  model-prefix: m\n"
    "  runner: b300\n"
    "  precision: fp4\n"
    "  framework: vllm\n"
    "  multinode: false\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - isl: 1024\n"
    "      osl: 1024\n"
    "      search-space:\n"
    "      - { tp: 4, conc-start: 1, conc-end: 1 }\n";

TEST(CheckSweepContainers, ImagesMountsAndTheModelDirectory) {
  MasterConfig bad;
  std::string text = kRow;
  text.replace(text.find("IMAGE"), 5, "'vllm/vllm openai:v1'");
  ASSERT_TRUE(AppendMasterConfigString(text, "m.yaml", bad).ok());
  SweepManifest m = OneEntrySweep();
  m.container.enabled = true;
  for (PlannedEntry& e : m.plan.entries) e.config_key = "k1";
  Status s = CheckSweepContainers(m, bad);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, "m.yaml:1:1: k1: field 'image': 'vllm/vllm openai:v1' is not a container"))
      << s.error().message;

  MasterConfig good;
  text = kRow;
  text.replace(text.find("IMAGE"), 5, "vllm/vllm-openai:v0.11.0");
  ASSERT_TRUE(AppendMasterConfigString(text, "m.yaml", good).ok());
  EXPECT_TRUE(CheckSweepContainers(m, good).ok());
  m.container.model_dir = "/models";
  EXPECT_TRUE(CheckSweepContainers(m, good).ok());
  m.container.model_dir = "/data";
  s = CheckSweepContainers(m, good);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, "recipe r: variable MODEL_PATH '/models/m' is not inside --model-dir /data"))
      << s.error().message;
  m.container.model_dir.clear();
  m.sweep_dir = "/a:b";
  s = CheckSweepContainers(m, good);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, "--sweep-dir '/a:b': holds ',' or ':'")) << s.error().message;
}

TEST(SweepCommand, ResumeTakesNoContainerOptions) {
  for (const char* opt : {"--no-container", "--squash-dir"}) {
    ::testing::internal::CaptureStderr();
    std::vector<std::string> args = {"--resume", "sw-x", opt};
    if (std::string(opt) == "--squash-dir") args.push_back("/tmp");
    EXPECT_EQ(RunSweepCommand(args), 2);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(Contains(err, "takes only --db (the sweep keeps the mode, selection, sbatch and container settings"))
        << err;
  }
}

}  // namespace
}  // namespace ix
