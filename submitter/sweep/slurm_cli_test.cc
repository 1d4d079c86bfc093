#include "submitter/sweep/slurm_cli.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/process/process.h"

namespace ix {
namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const std::vector<std::string> kEnv{"PATH=/usr/bin:/bin", "LC_ALL=C"};

// ---- pure parsers -------------------------------------------------------------------

TEST(SbatchParsable, IdWithAndWithoutCluster) {
  EXPECT_EQ(ParseSbatchParsable("1234;cluster\n").value(), 1234);
  EXPECT_EQ(ParseSbatchParsable("98765\n").value(), 98765);
  EXPECT_EQ(ParseSbatchParsable("  77;local  \r\n\n").value(), 77);
  for (const char* bad : {"", "\n", "Submitted batch job 12\n", ";cluster", "12a", "0", "-3"}) {
    Result<int64_t> r = ParseSbatchParsable(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(Contains(r.error().message, "expected a job id (ID or ID;CLUSTER)")) << r.error().message;
  }
}

TEST(SlurmStates, NamesCodesAndFinality) {
  EXPECT_EQ(ParseSlurmState("PENDING"), SlurmState::kPending);
  EXPECT_EQ(ParseSlurmState("RUNNING"), SlurmState::kRunning);
  EXPECT_EQ(ParseSlurmState("COMPLETING"), SlurmState::kCompleting);
  EXPECT_EQ(ParseSlurmState("OUT_OF_MEMORY"), SlurmState::kOutOfMemory);
  EXPECT_EQ(ParseSlurmState("NODE_FAIL"), SlurmState::kNodeFail);
  EXPECT_EQ(ParseSlurmState("CANCELLED by 1000"), SlurmState::kCancelled);
  EXPECT_EQ(ParseSlurmState("CANCELLED+"), SlurmState::kCancelled);
  EXPECT_EQ(ParseSlurmState("PD"), SlurmState::kPending);
  EXPECT_EQ(ParseSlurmState("CG"), SlurmState::kCompleting);
  EXPECT_EQ(ParseSlurmState("oom"), SlurmState::kOutOfMemory);
  EXPECT_EQ(ParseSlurmState("S"), SlurmState::kSuspended);
  EXPECT_EQ(ParseSlurmState("ST"), SlurmState::kStopped);
  EXPECT_EQ(ParseSlurmState("NEW_STATE_2030"), SlurmState::kUnknown);
  EXPECT_EQ(ParseSlurmState(""), SlurmState::kUnknown);
  for (SlurmState s : {SlurmState::kCompleted, SlurmState::kCancelled, SlurmState::kFailed, SlurmState::kTimeout,
                       SlurmState::kNodeFail, SlurmState::kOutOfMemory, SlurmState::kPreempted,
                       SlurmState::kBootFail, SlurmState::kDeadline}) {
    EXPECT_TRUE(Final(s)) << SlurmStateName(s);
  }
  for (SlurmState s : {SlurmState::kPending, SlurmState::kRunning, SlurmState::kCompleting, SlurmState::kSuspended,
                       SlurmState::kRequeued, SlurmState::kRequeueHold, SlurmState::kConfiguring,
                       SlurmState::kSpecialExit, SlurmState::kUnknown}) {
    EXPECT_FALSE(Final(s)) << SlurmStateName(s);
  }
  EXPECT_TRUE(Succeeded(SlurmState::kCompleted));
  EXPECT_FALSE(Succeeded(SlurmState::kFailed));
  // Every name round-trips.
  for (int i = 0; i <= static_cast<int>(SlurmState::kUnknown); ++i) {
    const SlurmState s = static_cast<SlurmState>(i);
    EXPECT_EQ(ParseSlurmState(SlurmStateName(s)), s) << SlurmStateName(s);
  }
}

TEST(TaskIds, ParseAndPrint) {
  EXPECT_EQ(ParseTaskId("1234").value(), (TaskId{1234, std::nullopt}));
  EXPECT_EQ(ParseTaskId("1234_7").value(), (TaskId{1234, 7}));
  EXPECT_EQ(ParseTaskId("1234_7").value().ToString(), "1234_7");
  EXPECT_EQ(ParseTaskId("1234").value().ToString(), "1234");
  for (const char* bad : {"", "_7", "1234_", "12x", "1234_[1-3]", "1234.0", "0"}) {
    EXPECT_FALSE(ParseTaskId(bad).ok()) << bad;
  }
}

TEST(ArrayIndices, RangesListsThrottlesAndSteps) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(ExpandArrayIndices("7").value(), V({7}));
  EXPECT_EQ(ExpandArrayIndices("[8-15%2]").value(), V({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(ExpandArrayIndices("8-15%2").value(), V({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(ExpandArrayIndices("[3,5,9-10]").value(), V({3, 5, 9, 10}));
  EXPECT_EQ(ExpandArrayIndices("1-7:2").value(), V({1, 3, 5, 7}));
  EXPECT_EQ(ExpandArrayIndices("[0-2,6-7%4]").value(), V({0, 1, 2, 6, 7}));
  for (const char* bad : {"", "[]", "[1-3", "3-1", "1-", "a", "1,,2", "1-7:0", "1%x", "0-99999999"}) {
    Result<V> r = ExpandArrayIndices(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(Contains(r.error().message, "array indices '")) << r.error().message;
  }
}

TEST(Squeue, PlainArrayAndPendingRangeLines) {
  const char* out =
      "1239|COMPLETED|None\n"
      "1240_0|RUNNING|None\n"
      "1240_1|FAILED|NonZeroExitCode\n"
      "1240_[8-11%2]|PENDING|JobArrayTaskLimit\n"
      "1240_[3,5]|PENDING|Dependency\n"
      "1241_[0-3]|PENDING|DependencyNeverSatisfied\n"
      "1242|PENDING|launch failed requeued held\n"
      "\n";
  Result<std::vector<QueueTask>> r = ParseSqueue(out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& t = r.value();
  ASSERT_EQ(t.size(), 1u + 2u + 4u + 2u + 4u + 1u);
  EXPECT_EQ(t[0].id, (TaskId{1239, std::nullopt}));
  EXPECT_EQ(t[0].state, SlurmState::kCompleted);
  EXPECT_EQ(t[0].reason, "None");
  EXPECT_EQ(t[1].id.ToString(), "1240_0");
  EXPECT_EQ(t[1].state, SlurmState::kRunning);
  EXPECT_EQ(t[2].state, SlurmState::kFailed);
  EXPECT_EQ(t[2].reason, "NonZeroExitCode");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(t[3 + i].id, (TaskId{1240, 8 + i}));
    EXPECT_EQ(t[3 + i].state, SlurmState::kPending);
    EXPECT_EQ(t[3 + i].state_name, "PENDING");
    EXPECT_EQ(t[3 + i].reason, "JobArrayTaskLimit");
  }
  EXPECT_EQ(t[7].id.ToString(), "1240_3");
  EXPECT_EQ(t[8].id.ToString(), "1240_5");
  EXPECT_EQ(t[9].reason, "DependencyNeverSatisfied");
  EXPECT_EQ(t[13].reason, "launch failed requeued held");

  EXPECT_TRUE(ParseSqueue("").value().empty());
  Result<std::vector<QueueTask>> bad = ParseSqueue("1239|COMPLETED|None\n1240 RUNNING\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.error().message, "squeue output line 2 '1240 RUNNING': expected ID|STATE|REASON"))
      << bad.error().message;
  EXPECT_FALSE(ParseSqueue("1240_[9-3]|PENDING|None\n").ok());
  EXPECT_FALSE(ParseSqueue("x_[1-3]|PENDING|None\n").ok());
}

TEST(ExitCodes, StatusAndSignal) {
  EXPECT_EQ(ParseSlurmExitCode("1:0").value(), (SlurmExitCode{1, 0}));
  EXPECT_EQ(ParseSlurmExitCode("0:9").value(), (SlurmExitCode{0, 9}));
  EXPECT_EQ(ParseSlurmExitCode("0:0").value(), (SlurmExitCode{0, 0}));
  EXPECT_FALSE(ParseSlurmExitCode("1").ok());
  EXPECT_FALSE(ParseSlurmExitCode("a:b").ok());
}

// As `scontrol -o show job` prints them (Slurm 22.05), paths with spaces.
const char* kPendingArray =
    "JobId=1241 ArrayJobId=1241 ArrayTaskId=0-7%2 ArrayTaskThrottle=2 JobName=ix-sw-20261202-160900-ab12-8k1k "
    "UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=4294901758 Nice=0 Account=(null) QOS=normal "
    "JobState=PENDING Reason=DependencyNeverSatisfied Dependency=afterok:1239(failed) Requeue=1 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=01:00:00 TimeMin=N/A "
    "SubmitTime=2026-12-02T16:09:01 EligibleTime=Unknown AccrueTime=Unknown StartTime=Unknown EndTime=Unknown "
    "Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T16:09:05 Scheduler=Main "
    "Partition=debug AllocNode:Sid=login1:4242 ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=1 "
    "NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=1G,node=1,billing=1 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=1G MinTmpDiskNode=0 Features=(null) "
    "DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null) "
    "Command=/home/alice/my sweeps/sw-1/8k1k.sh --conc=8 X=1 WorkDir=/home/alice/my sweeps/sw-1 "
    "StdErr=/home/alice/my sweeps/sw-1/logs/%A_%a.err StdIn=/dev/null "
    "StdOut=/home/alice/my sweeps/sw-1/logs/%A_%a.out Power= ";
const char* kFailedTask =
    "JobId=1237 ArrayJobId=1235 ArrayTaskId=2 JobName=ix-8k1k UserId=alice(1000) GroupId=alice(1000) "
    "JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 ExitCode=1:0 "
    "Partition=debug NodeList=node1 Command=/s/8k1k.sh WorkDir=/s StdOut=/s/logs/1235_2.out Power=";
const char* kHeldJob =
    "JobId=1250 JobName=canary JobState=PENDING Reason=launch failed requeued held Dependency=(null) "
    "ExitCode=0:0 Command=/s/canary.sh WorkDir=/s";

TEST(Scontrol, FieldsWithSpacesAndEquals) {
  Result<std::map<std::string, std::string>> f = ParseScontrolFields(kPendingArray);
  ASSERT_TRUE(f.ok()) << f.error().message;
  const auto& m = f.value();
  EXPECT_EQ(m.at("Command"), "/home/alice/my sweeps/sw-1/8k1k.sh --conc=8 X=1");
  EXPECT_EQ(m.at("WorkDir"), "/home/alice/my sweeps/sw-1");
  EXPECT_EQ(m.at("StdErr"), "/home/alice/my sweeps/sw-1/logs/%A_%a.err");
  EXPECT_EQ(m.at("StdOut"), "/home/alice/my sweeps/sw-1/logs/%A_%a.out");
  EXPECT_EQ(m.at("TRES"), "cpu=1,mem=1G,node=1,billing=1");
  EXPECT_EQ(m.at("AllocNode:Sid"), "login1:4242");
  EXPECT_EQ(m.at("ReqB:S:C:T"), "0:0:*:*");
  EXPECT_EQ(m.at("NodeList"), "");
  EXPECT_EQ(m.at("Power"), "");
  EXPECT_EQ(m.at("MCS_label"), "N/A");
  EXPECT_EQ(m.at("Dependency"), "afterok:1239(failed)");
  EXPECT_EQ(m.count("X"), 0u);

  Result<std::map<std::string, std::string>> held = ParseScontrolFields(kHeldJob);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held.value().at("Reason"), "launch failed requeued held");
  EXPECT_EQ(held.value().at("Dependency"), "(null)");

  Result<std::map<std::string, std::string>> bad = ParseScontrolFields("slurm_load_jobs error: Invalid job id");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.error().message, "expected KEY=VALUE at 'slurm_load_jobs'")) << bad.error().message;
}

TEST(Scontrol, ShowJobRecordsOneLinerAndMultiLine) {
  const std::string out = std::string(kPendingArray) + "\n" + kFailedTask + "\n" + kHeldJob + "\n";
  Result<std::vector<JobInfo>> r = ParseScontrolShowJob(out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().size(), 3u);
  const JobInfo& pend = r.value()[0];
  EXPECT_EQ(pend.job_id, 1241);
  EXPECT_EQ(pend.array_job_id, 1241);
  EXPECT_EQ(pend.array_task_id, "0-7%2");
  EXPECT_EQ(pend.name, "ix-sw-20261202-160900-ab12-8k1k");
  EXPECT_EQ(pend.state, SlurmState::kPending);
  EXPECT_EQ(pend.reason, "DependencyNeverSatisfied");
  EXPECT_EQ(pend.dependency, "afterok:1239(failed)");
  ASSERT_NE(pend.Get("Partition"), nullptr);
  EXPECT_EQ(*pend.Get("Partition"), "debug");
  EXPECT_EQ(pend.Get("NoSuchField"), nullptr);
  const JobInfo& failed = r.value()[1];
  EXPECT_EQ(failed.job_id, 1237);
  EXPECT_EQ(failed.array_job_id, 1235);
  EXPECT_EQ(failed.array_task_id, "2");
  EXPECT_EQ(failed.state, SlurmState::kFailed);
  EXPECT_EQ(failed.exit_code, (SlurmExitCode{1, 0}));
  EXPECT_FALSE(r.value()[2].array_job_id);

  // Without -o: a record over several indented lines, blank line between.
  const char* multi =
      "JobId=1237 ArrayJobId=1235 ArrayTaskId=2 JobName=ix-8k1k\n"
      "   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A\n"
      "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)\n"
      "   ExitCode=0:15\n"
      "   Command=/s/8k1k.sh\n"
      "   WorkDir=/s\n"
      "\n"
      "JobId=1238 JobName=x\n"
      "   JobState=COMPLETED Reason=None ExitCode=0:0\n";
  Result<std::vector<JobInfo>> m = ParseScontrolShowJob(multi);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m.value().size(), 2u);
  EXPECT_EQ(m.value()[0].state, SlurmState::kTimeout);
  EXPECT_EQ(m.value()[0].exit_code, (SlurmExitCode{0, 15}));
  EXPECT_EQ(*m.value()[0].Get("Command"), "/s/8k1k.sh");
  EXPECT_EQ(*m.value()[0].Get("WorkDir"), "/s");
  EXPECT_EQ(m.value()[1].state, SlurmState::kCompleted);

  EXPECT_TRUE(ParseScontrolShowJob("").value().empty());
  EXPECT_FALSE(ParseScontrolShowJob("JobId=abc JobState=RUNNING\n").ok());
  EXPECT_FALSE(ParseScontrolShowJob("JobId=1 ExitCode=x\n").ok());
}

// ---- RunCommand ------------------------------------------------------------------

TEST(RunCommand, RunsAProgramWithExactlyTheGivenEnvironment) {
  Result<CommandOutput> r = RunCommand({"echo", "hello", "two words"}, kEnv);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().ok());
  EXPECT_EQ(r.value().out, "hello two words\n");
  EXPECT_EQ(r.value().err, "");
  Result<CommandOutput> env = RunCommand({"/usr/bin/env"}, {"A=1", "B=x y"});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env.value().out, "A=1\nB=x y\n");
  // stdin is /dev/null: cat ends at once.
  Result<CommandOutput> cat = RunCommand({"cat"}, kEnv, std::chrono::seconds(5));
  ASSERT_TRUE(cat.ok()) << cat.error().message;
  EXPECT_EQ(cat.value().out, "");
}

TEST(RunCommand, ReadsMegabytesOnBothPipesWithoutDeadlock) {
  // stderr first: a reader that waited for stdout's end would hang here.
  Result<CommandOutput> r = RunCommand(
      {"/bin/sh", "-c", "yes e | head -c 3000000 >&2; yes o | head -c 3000000; yes e | head -c 1000 >&2"}, kEnv,
      std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().ok()) << r.value().Describe();
  EXPECT_EQ(r.value().out.size(), 3000000u);
  EXPECT_EQ(r.value().err.size(), 3001000u);
  EXPECT_EQ(r.value().out.substr(0, 4), "o\no\n");
  EXPECT_EQ(r.value().err.substr(0, 4), "e\ne\n");
}

TEST(RunCommand, ExitStatusSignalMissingProgramAndTimeout) {
  Result<CommandOutput> fail = RunCommand({"/bin/sh", "-c", "echo oops >&2; exit 3"}, kEnv);
  ASSERT_TRUE(fail.ok());
  EXPECT_FALSE(fail.value().ok());
  EXPECT_EQ(fail.value().exit_code, 3);
  EXPECT_EQ(fail.value().err, "oops\n");
  EXPECT_EQ(fail.value().Describe(), "exit status 3");

  Result<CommandOutput> sig = RunCommand({"/bin/sh", "-c", "kill -TERM $$"}, kEnv);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig.value().signal, 15);
  EXPECT_EQ(sig.value().Describe(), "killed by signal 15 (Terminated)");

  Result<CommandOutput> missing = RunCommand({"ix-no-such-program"}, kEnv);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "cannot execute 'ix-no-such-program': No such file or directory (PATH=/usr/bin:/bin)");
  Result<CommandOutput> abs = RunCommand({"/nonexistent/sbatch"}, kEnv);
  ASSERT_FALSE(abs.ok());
  EXPECT_EQ(abs.error().message, "cannot execute '/nonexistent/sbatch': No such file or directory");
  EXPECT_FALSE(RunCommand({}, kEnv).ok());
  EXPECT_TRUE(Contains(RunCommand({"echo"}, {"HOME=/"}).error().message, "PATH is not set"));

  const auto start = std::chrono::steady_clock::now();
  Result<CommandOutput> slow =
      RunCommand({"/bin/sh", "-c", "echo still thinking >&2; sleep 30"}, kEnv, std::chrono::milliseconds(300));
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error().message,
            "'/bin/sh' did not finish within 300 ms and was killed; its stderr ended with: still thinking");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// ---- RealSlurmCli against fake programs ---------------------------------------------

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ix-slurm-cli-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A shell script standing in for a Slurm tool: it records its arguments one
// a line in NAME.args and runs `body`.
std::string FakeTool(const TempDir& d, const std::string& name, const std::string& body) {
  const std::string path = d.path() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

std::string Args(const std::string& tool) {
  std::ifstream in(tool + ".args");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RealSlurmCli, SubmitPassesArgvAndEnvironmentAndReadsTheId) {
  TempDir d;
  SlurmPrograms p;
  p.sbatch = FakeTool(d, "sbatch",
                      "echo \"sbatch: warning: $IX_SWEEP_ID\" >&2\n"
                      "echo '4242;cluster'");
  RealSlurmCli cli({"PATH=/usr/bin:/bin", "IX_SWEEP_ID=sw-1"}, p);
  Result<int64_t> id = cli.Submit({"--array=0-7%2", "--job-name=ix sw-1 8k1k", "--dependency=afterok:1239",
                                   "--output=/s/logs/%A_%a.out"},
                                  "/s/8k1k.sh");
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id.value(), 4242);
  EXPECT_EQ(Args(p.sbatch),
            "--parsable\n--array=0-7%2\n--job-name=ix sw-1 8k1k\n--dependency=afterok:1239\n"
            "--output=/s/logs/%A_%a.out\n/s/8k1k.sh\n");
}

TEST(RealSlurmCli, RejectionCarriesSbatchStderrVerbatim) {
  TempDir d;
  SlurmPrograms p;
  p.sbatch = FakeTool(d, "sbatch", "echo 'sbatch: error: invalid partition specified: nope' >&2\nexit 1");
  RealSlurmCli cli(kEnv, p);
  Result<int64_t> id = cli.Submit({"--partition=nope"}, "/s/canary.sh");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().message,
            "sbatch rejected /s/canary.sh (exit status 1): sbatch: error: invalid partition specified: nope");

  p.sbatch = FakeTool(d, "sbatch2", "echo 'Submitted batch job 12'");
  Result<int64_t> odd = RealSlurmCli(kEnv, p).Submit({}, "/s/x.sh");
  ASSERT_FALSE(odd.ok());
  EXPECT_TRUE(Contains(odd.error().message, "printed 'Submitted batch job 12'")) << odd.error().message;

  // The real programs by name, through PATH: here a directory holding the fake.
  FakeTool(d, "sbatch", "echo 77");
  RealSlurmCli by_path({"PATH=" + d.path() + ":/usr/bin:/bin"});
  EXPECT_EQ(by_path.Submit({}, "/s/x.sh").value(), 77);
}

// Only a clean rejection proves no job was made; a timeout, a kill or an
// answer without an id leave it open, and the caller must look it up.
TEST(RealSlurmCli, SubmitSaysWhenTheJobMayExist) {
  TempDir d;
  SlurmPrograms p;
  p.sbatch = FakeTool(d, "sbatch", "echo 'sbatch: error: invalid partition' >&2\nexit 1");
  Result<int64_t> rejected = RealSlurmCli(kEnv, p).Submit({}, "/s/x.sh");
  ASSERT_FALSE(rejected.ok());
  EXPECT_FALSE(SubmitOutcomeUnknown(rejected.error())) << rejected.error().message;

  p.sbatch = FakeTool(d, "sbatch2", "echo 'Submitted batch job 12'");
  Result<int64_t> odd = RealSlurmCli(kEnv, p).Submit({}, "/s/x.sh");
  ASSERT_FALSE(odd.ok());
  EXPECT_TRUE(SubmitOutcomeUnknown(odd.error())) << odd.error().message;

  p.sbatch = FakeTool(d, "sbatch3", "sleep 5");
  Result<int64_t> slow = RealSlurmCli(kEnv, p, std::chrono::milliseconds(200)).Submit({}, "/s/x.sh");
  ASSERT_FALSE(slow.ok());
  EXPECT_TRUE(SubmitOutcomeUnknown(slow.error())) << slow.error().message;

  p.sbatch = FakeTool(d, "sbatch4", "kill -9 $$");
  Result<int64_t> killed = RealSlurmCli(kEnv, p).Submit({}, "/s/x.sh");
  ASSERT_FALSE(killed.ok());
  EXPECT_TRUE(SubmitOutcomeUnknown(killed.error())) << killed.error().message;
}

TEST(RealSlurmCli, QueueArgvAndParsing) {
  TempDir d;
  SlurmPrograms p;
  p.squeue = FakeTool(d, "squeue",
                      "printf '1240_0|RUNNING|None\\n1240_[1-3%%2]|PENDING|JobArrayTaskLimit\\n1239|COMPLETED|None\\n'");
  RealSlurmCli cli(kEnv, p);
  Result<std::vector<QueueTask>> q = cli.Queue({1239, 1240});
  ASSERT_TRUE(q.ok()) << q.error().message;
  ASSERT_EQ(q.value().size(), 5u);
  EXPECT_EQ(q.value()[3].id.ToString(), "1240_3");
  EXPECT_EQ(Args(p.squeue), "--noheader\n--array\n--states=all\n--jobs=1239,1240\n--format=%i|%T|%r\n");
  EXPECT_TRUE(cli.Queue({}).value().empty());

  // A job slurmctld has forgotten.
  p.squeue = FakeTool(d, "squeue2", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
  Result<std::vector<QueueTask>> gone = RealSlurmCli(kEnv, p).Queue({99});
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_TRUE(gone.value().empty());
  p.squeue = FakeTool(d, "squeue3", "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1");
  Result<std::vector<QueueTask>> down = RealSlurmCli(kEnv, p).Queue({99});
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().message, "squeue failed (exit status 1): squeue: error: Unable to contact slurm controller");
}

TEST(RealSlurmCli, CancelWithStateFilterAndFinishedJobs) {
  TempDir d;
  SlurmPrograms p;
  p.scancel = FakeTool(d, "scancel", "exit 0");
  RealSlurmCli cli(kEnv, p);
  ASSERT_TRUE(cli.Cancel({"1240", "1241_3"}, SlurmState::kPending).ok());
  EXPECT_EQ(Args(p.scancel), "--quiet\n--state=PENDING\n1240\n1241_3\n");
  EXPECT_TRUE(cli.Cancel({}).ok());
  EXPECT_TRUE(Contains(cli.Cancel({"1240"}, SlurmState::kFailed).error().message, "use PENDING, RUNNING or SUSPENDED"));
  EXPECT_FALSE(cli.Cancel({"1240; rm -rf /"}).ok());

  p.scancel = FakeTool(d, "scancel2",
                       "echo 'scancel: error: Kill job error on job id 1240: Job/step already completing or "
                       "completed' >&2; exit 1");
  EXPECT_TRUE(RealSlurmCli(kEnv, p).Cancel({"1240"}).ok());
  p.scancel = FakeTool(d, "scancel3", "echo 'scancel: error: Access/permission denied' >&2; exit 1");
  Status denied = RealSlurmCli(kEnv, p).Cancel({"1240"});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().message, "scancel 1240 failed (exit status 1): scancel: error: Access/permission denied");
}

TEST(RealSlurmCli, ShowJobAndFindByName) {
  TempDir d;
  SlurmPrograms p;
  p.scontrol = FakeTool(d, "scontrol", std::string("cat <<'EOF'\n") + kFailedTask + "\nEOF");
  p.squeue = FakeTool(d, "squeue", "printf '1235\\n1235\\n'");
  p.sacct = FakeTool(d, "sacct", "exit 1");
  RealSlurmCli cli(kEnv, p);
  Result<std::vector<JobInfo>> j = cli.ShowJob(1235);
  ASSERT_TRUE(j.ok()) << j.error().message;
  ASSERT_EQ(j.value().size(), 1u);
  EXPECT_EQ(j.value()[0].exit_code.status, 1);
  EXPECT_EQ(Args(p.scontrol), "--oneliner\nshow\njob\n1235\n");
  Result<std::vector<int64_t>> found = cli.FindJobsByName("ix-8k1k");
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found.value(), std::vector<int64_t>{1235});
  EXPECT_TRUE(Contains(Args(p.squeue), "--name=ix-8k1k\n--format=%F\n"));

  // Not in squeue any more: sacct knows it; with accounting off, nothing.
  p.squeue = FakeTool(d, "squeue2", "exit 0");
  p.sacct = FakeTool(d, "sacct2", "printf '1300_[0-3]\\n1300_4\\n1300_4.batch\\n'");
  EXPECT_EQ(RealSlurmCli(kEnv, p).FindJobsByName("ix-8k1k").value(), std::vector<int64_t>{1300});
  p.sacct = FakeTool(d, "sacct3", "echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1");
  EXPECT_TRUE(RealSlurmCli(kEnv, p).FindJobsByName("ix-8k1k").value().empty());

  p.scontrol = FakeTool(d, "scontrol2", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
  Result<std::vector<JobInfo>> none = RealSlurmCli(kEnv, p).ShowJob(5);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message,
            "scontrol show job 5 failed (exit status 1): slurm_load_jobs error: Invalid job id specified");
}

}  // namespace
}  // namespace ix
