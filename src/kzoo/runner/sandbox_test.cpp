// The sandbox's promises, each checked from inside a real bubblewrap sandbox:
// who the program runs as, what it can see, reach and write, which system
// calls it may make, and that every limit ends it (and all it spawned).
#include "kzoo/runner/sandbox.hpp"

#include <algorithm>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/runner/cgroup.hpp"
#include "kzoo/runner/cpu_list.hpp"
#include "kzoo/runner/gpu_cpus.hpp"
#include "kzoo/runner/test_support.hpp"

namespace kzoo::runner {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::bwrap_unusable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  }

  SandboxSpec spec(std::vector<std::string> argv) const {
    SandboxSpec s;
    s.argv = std::move(argv);
    s.workdir = wd.path();
    s.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}};
    s.wall_limit = std::chrono::seconds(30);
    s.memory_bytes = 1ull << 30;
    s.max_pids = 128;
    return s;
  }
  SandboxSpec sh(const std::string& script) const { return spec({"/bin/sh", "-c", script}); }
  SandboxSpec py(const std::string& script) const { return spec({"/usr/bin/python3", "-c", script}); }

  SandboxResult run(const SandboxSpec& s, const SandboxOptions& o = {}) {
    auto r = run_sandbox(s, o);
    if (!r) ADD_FAILURE() << r.error().message;
    return r ? *r : SandboxResult{};
  }

  TempDir wd;
};

TEST_F(SandboxTest, RunsTheProgramAndReportsItsOutputAndExitCode) {
  auto r = run(sh("echo out; echo err >&2; exit 3"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.stdout_data, "out\n");
  EXPECT_EQ(r.stderr_tail, "err\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.oom);
}

TEST_F(SandboxTest, RunsAsAnUnprivilegedUidWithoutCapabilities) {
  auto r = run(sh("grep -E '^(Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status"));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("Uid:\t0\t")));
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("Gid:\t0\t")));
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_THAT(r.stdout_data, HasSubstr(std::string(cap) + ":\t0000000000000000")) << r.stdout_data;
  EXPECT_THAT(r.stdout_data, HasSubstr("NoNewPrivs:\t1"));
  if (::geteuid() == 0) {
    EXPECT_THAT(r.stdout_data, HasSubstr("Uid:\t65534\t"));
  }
}

TEST_F(SandboxTest, SeesOnlyTheLoopbackInterfaceAndCannotReachTheHost) {
  // A service listening on the host's loopback must be out of reach.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);

  auto r = run(py(R"(
import socket
ifaces = [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]
print('ifaces', ','.join(ifaces))
for host, port in (('127.0.0.1', )" + std::to_string(port) + R"(), ('1.1.1.1', 53)):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print(host, 'CONNECTED')
    except OSError as e:
        print(host, 'failed', type(e).__name__)
)"));
  ::close(listener);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  EXPECT_THAT(r.stdout_data, HasSubstr("ifaces lo\n"));
  EXPECT_THAT(r.stdout_data, HasSubstr("127.0.0.1 failed ConnectionRefusedError"));
  EXPECT_THAT(r.stdout_data, HasSubstr("1.1.1.1 failed"));
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("CONNECTED")));
}

TEST_F(SandboxTest, EverythingButTheWorkdirAndTmpIsReadOnly) {
  auto r = run(sh(R"(
for f in /usr/kzoo-probe /etc/kzoo-probe /kzoo-probe /kzoo/kzoo-probe /proc/kzoo-probe; do
  if touch $f 2>/dev/null; then echo "WROTE $f"; else echo "refused $f"; fi
done
for f in /kzoo/work/probe /tmp/probe /dev/shm/probe; do
  if touch $f; then echo "wrote $f"; else echo "REFUSED $f"; fi
done
pwd
)"));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("WROTE")));
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("REFUSED")));
  EXPECT_THAT(r.stdout_data, HasSubstr("/kzoo/work\n"));
  // The workdir is the host's directory: the file written inside is here.
  struct stat st;
  EXPECT_EQ(::stat((wd / "probe").c_str(), &st), 0);
}

TEST_F(SandboxTest, TheHostsPrivateDirectoriesDoNotExist) {
  auto r = run(sh(R"(
for d in /root /home /work /var /srv /opt /mnt /media /run /sys /boot /etc/shadow /etc/hostname )" +
                  wd.path() + R"(; do
  if [ -e $d ]; then echo "VISIBLE $d"; fi
done
cat /etc/passwd)"));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("VISIBLE")));
  // The generated passwd names only the sandbox user.
  EXPECT_THAT(r.stdout_data, HasSubstr("kzoo:x:"));
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("root:")));
}

TEST_F(SandboxTest, AReadOnlyBindCanCoverPartOfTheWorkdir) {
  testing::write_file(wd / ".kernel_package/benchmark.py", "trusted\n");
  auto s = sh("echo forged > .kernel_package/benchmark.py; cat .kernel_package/benchmark.py; echo ok > src.txt");
  s.ro_binds.push_back({wd / ".kernel_package", std::string(kSandboxWorkdir) + "/.kernel_package"});
  auto r = run(s);
  EXPECT_EQ(r.stdout_data, "trusted\n");
  EXPECT_THAT(r.stderr_tail, HasSubstr("Read-only file system"));
  EXPECT_EQ(testing::read_file(wd / ".kernel_package/benchmark.py"), "trusted\n");
  EXPECT_EQ(testing::read_file(wd / "src.txt"), "ok\n");
}

TEST_F(SandboxTest, APassedDescriptorIsReadableOnceAndNoOtherDescriptorLeaks) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ASSERT_EQ(::write(p[1], "c0ffee", 6), 6);
  ::close(p[1]);
  // A descriptor we forgot to mark close-on-exec must still not reach the program.
  testing::write_file(wd / "stray-marker", "x");
  int stray = ::open((wd / "stray-marker").c_str(), O_RDONLY);
  ASSERT_GE(stray, 0);
  auto s = py("import os\nfd=int(os.environ['SEED_FD'])\n"
              "print('first', os.read(fd, 100).decode())\nprint('second', repr(os.read(fd, 100)))\n"
              "for x in sorted(os.listdir('/proc/self/fd'), key=int):\n"
              "    try: print('fd', x, os.readlink('/proc/self/fd/' + x))\n"
              "    except OSError: pass\n"
              "print('env', 'c0ffee' in repr(dict(os.environ)))\n");
  s.pass_fds = {p[0]};
  s.env.emplace_back("SEED_FD", std::to_string(p[0]));
  auto r = run(s);
  ::close(p[0]);
  ::close(stray);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  EXPECT_THAT(r.stdout_data, HasSubstr("first c0ffee\nsecond b''\n"));
  EXPECT_THAT(r.stdout_data, HasSubstr("fd " + std::to_string(p[0]) + " pipe:"));
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("stray-marker")));
  EXPECT_THAT(r.stdout_data, HasSubstr("env False"));
}

TEST_F(SandboxTest, SeccompDeniesProcessInspectionAndKernelAttackSurface) {
  std::string calls = "{'ptrace': " + std::to_string(SYS_ptrace) +
                      ", 'process_vm_readv': " + std::to_string(SYS_process_vm_readv) +
                      ", 'process_vm_writev': " + std::to_string(SYS_process_vm_writev) +
                      ", 'bpf': " + std::to_string(SYS_bpf) +
                      ", 'perf_event_open': " + std::to_string(SYS_perf_event_open) +
                      ", 'userfaultfd': " + std::to_string(SYS_userfaultfd) +
                      ", 'io_uring_setup': " + std::to_string(SYS_io_uring_setup) +
                      ", 'keyctl': " + std::to_string(SYS_keyctl) + "}";
  auto r = run(py("import ctypes, errno, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  "for name, nr in " + calls + ".items():\n"
                  "    rc = libc.syscall(nr, 0, 0, 0, 0, 0, 0)\n"
                  "    print(name, rc, errno.errorcode.get(ctypes.get_errno(), '?'))\n"
                  "print('unshare-user', libc.unshare(0x10000000))\n"));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open",
                           "userfaultfd", "io_uring_setup", "keyctl"})
    EXPECT_THAT(r.stdout_data, HasSubstr(std::string(name) + " -1 EPERM")) << r.stdout_data;
  EXPECT_THAT(r.stdout_data, HasSubstr("unshare-user -1"));
}

TEST_F(SandboxTest, TheEnvironmentIsExactlyTheSpecs) {
  auto s = spec({"/usr/bin/env"});
  s.env = {{"A", "1"}, {"PATH", "/usr/bin"}};
  auto r = run(s);
  // bwrap's --chdir adds PWD; nothing of ours leaks in.
  EXPECT_EQ(r.stdout_data, "A=1\nPATH=/usr/bin\nPWD=/kzoo/work\n");
}

TEST_F(SandboxTest, AnInfiniteLoopIsKilledAtTheWallClockLimit) {
  auto s = sh("while :; do :; done");
  s.wall_limit = std::chrono::milliseconds(800);
  auto r = run(s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exited_ok());
  EXPECT_GE(r.wall.count(), 800);
  EXPECT_LT(r.wall.count(), 8000);
}

// A daemon (setsid + double fork) writes a heartbeat; once run_sandbox has
// returned, the heartbeat must stop.
void expect_daemon_dead(const std::string& beat_file) {
  auto size_now = [&] { return testing::read_file(beat_file).size(); };
  auto before = size_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(size_now(), before) << "the daemonised process is still writing " << beat_file;
}

const char* kDaemon =
    "( setsid sh -c 'while :; do echo beat >> beat; sleep 0.1; done' </dev/null >/dev/null 2>&1 & ); "
    "sleep 0.5; ";

TEST_F(SandboxTest, ADaemonisedProcessDiesWhenTheProgramExits) {
  auto r = run(sh(std::string(kDaemon) + "exit 0"));
  EXPECT_EQ(r.exit_code, 0) << r.stderr_tail;
  EXPECT_LT(r.wall.count(), 5000);
  expect_daemon_dead(wd / "beat");
}

TEST_F(SandboxTest, ADaemonisedProcessDiesAtTheTimeout) {
  auto s = sh(std::string(kDaemon) + "sleep 100");
  s.wall_limit = std::chrono::seconds(1);
  auto r = run(s);
  EXPECT_TRUE(r.timed_out);
  expect_daemon_dead(wd / "beat");
}

TEST_F(SandboxTest, TheProcessCountLimitStopsForking) {
  if (detect_cgroup_version() == CgroupVersion::none) GTEST_SKIP() << "needs a cgroup (run as root)";
  auto s = py("import os, time\nn = 0\nfor i in range(200):\n    try:\n        pid = os.fork()\n"
              "    except OSError:\n        continue\n    if pid == 0:\n        time.sleep(30); os._exit(0)\n"
              "    n += 1\nprint('forked', n)\n");
  s.max_pids = 24;
  auto r = run(s);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_tail;
  int forked = std::stoi(r.stdout_data.substr(r.stdout_data.find(' ') + 1));
  EXPECT_GT(forked, 0);
  EXPECT_LT(forked, 24);
  EXPECT_LT(r.wall.count(), 10000) << "the sleeping children outlived the program";
}

TEST_F(SandboxTest, AForkBombIsContainedAndCleanedUp) {
  if (detect_cgroup_version() == CgroupVersion::none) GTEST_SKIP() << "needs a cgroup (run as root)";
  auto s = spec({"/bin/bash", "-c", "b() { b | b & }; b; sleep 100"});
  s.max_pids = 64;
  s.wall_limit = std::chrono::seconds(2);
  auto r = run(s);
  EXPECT_FALSE(r.exited_ok());
  EXPECT_LT(r.wall.count(), 15000);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST_F(SandboxTest, AMemoryHogIsOomKilled) {
  if (detect_cgroup_version() == CgroupVersion::none) GTEST_SKIP() << "needs a cgroup (run as root)";
  auto s = py("x = []\nwhile True:\n    x.append(b'\\x01' * (8 << 20))\n");
  s.memory_bytes = 96ull << 20;
  auto r = run(s);
  EXPECT_TRUE(r.oom) << "exit " << r.exit_code << " signal " << r.signal << " " << r.stderr_tail;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  ASSERT_TRUE(r.peak_memory_bytes.has_value());
  EXPECT_LE(*r.peak_memory_bytes, 96ull << 20);
}

TEST_F(SandboxTest, AnOutputFloodIsCappedWithoutBlockingTheProgram) {
  auto s = sh("head -c 50000000 /dev/zero; head -c 5000000 /dev/zero | tr '\\0' e >&2; echo done >&2");
  s.stdout_cap = 1u << 20;
  s.stderr_cap = 4096;
  auto r = run(s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data.size(), 1u << 20);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stderr_tail.size(), 4096u);
  EXPECT_TRUE(r.stderr_truncated);
  EXPECT_EQ(r.stderr_tail.substr(4091), "done\n");
}

TEST_F(SandboxTest, AMissingBubblewrapIsAClearError) {
  SandboxOptions o;
  o.bwrap = "/nonexistent/bwrap";
  auto r = run_sandbox(sh("true"), o);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("bubblewrap (bwrap) not found"));
  EXPECT_THAT(r.error().message, HasSubstr("apt-get install bubblewrap"));
  EXPECT_THAT(r.error().message, HasSubstr("--no-sandbox"));
}

TEST_F(SandboxTest, ASandboxThatCannotBeSetUpIsAnErrorNotAResult) {
  auto s = sh("true");
  s.ro_binds.push_back({"/etc/hostname", "/usr/bin"});  // a file cannot cover a directory
  auto r = run_sandbox(s);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("sandbox setup failed"));
}

TEST_F(SandboxTest, WithoutTheSandboxTheSameArgvRunsWithTheSameEnvAndLimits) {
  SandboxOptions o;
  o.sandboxed = false;
  auto s = sh("env; pwd; echo x > here");
  s.env = {{"PATH", "/usr/bin:/bin"}, {"KZOO_X", "1"}};
  auto r = run(s, o);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  EXPECT_THAT(r.stdout_data, HasSubstr("KZOO_X=1\n"));
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("HOME=")));
  EXPECT_THAT(r.stdout_data, HasSubstr(wd.path() + "\n"));
  EXPECT_EQ(testing::read_file(wd / "here"), "x\n");

  auto slow = sh(std::string(kDaemon) + "sleep 100");
  slow.wall_limit = std::chrono::seconds(1);
  auto t = run(slow, o);
  EXPECT_TRUE(t.timed_out);
  if (detect_cgroup_version() != CgroupVersion::none) expect_daemon_dead(wd / "beat");
}

// A GPU job's processes stay on its GPU's cores (gpu_cpus.hpp): bwrap and all
// it starts inherit the set, sandboxed or not.
TEST_F(SandboxTest, TheRunAndEverythingItStartsStayOnItsCpuSet) {
  auto allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const int cpu = allowed.back();
  for (bool sandboxed : {true, false}) {
    auto s = sh("grep Cpus_allowed_list /proc/self/status; sh -c 'grep Cpus_allowed_list /proc/self/status'");
    s.cpu_affinity = {cpu};
    SandboxOptions o;
    o.sandboxed = sandboxed;
    auto r = run(s, o);
    EXPECT_TRUE(r.exited_ok()) << r.stderr_tail;
    const std::string line = "Cpus_allowed_list:\t" + std::to_string(cpu) + "\n";
    EXPECT_EQ(r.stdout_data, line + line) << (sandboxed ? "sandboxed" : "unsandboxed");
  }
}

TEST_F(SandboxTest, ACpuThisProcessMayNotUseIsAnErrorNamingItAndNothingRuns) {
  auto s = sh("touch ran");
  s.cpu_affinity = {0, kMaxCpu};
  auto r = run_sandbox(s);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("CPUs " + std::to_string(kMaxCpu) + " of the run's CPU set"));
  EXPECT_FALSE(std::filesystem::exists(wd / "ran"));
}

TEST(GpuDeviceNodes, AJobOfSomeGpusGetsTheirNodesAndTheControlNodesAndNoOthers) {
  TempDir dev;
  for (const char* n : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidia2", "nvidia10", "null"})
    std::ofstream(dev.path() + "/" + n) << "";
  const std::string d = dev.path();
  auto all = gpu_device_nodes(d);
  EXPECT_EQ(all.size(), 7u);
  EXPECT_EQ(*gpu_device_nodes_for({}, d), all) << "no GPUs named: all of them";
  auto one = gpu_device_nodes_for({1}, d);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(*one, (std::vector<std::string>{d + "/nvidiactl", d + "/nvidia-uvm", d + "/nvidia-uvm-tools", d + "/nvidia1"}));
  auto two = gpu_device_nodes_for({10, 0, 10}, d);
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(*two, (std::vector<std::string>{d + "/nvidiactl", d + "/nvidia-uvm", d + "/nvidia-uvm-tools", d + "/nvidia10",
                                            d + "/nvidia0"}))
      << "each GPU once, in the order asked";
  auto missing = gpu_device_nodes_for({3}, d);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("GPU 3: " + d + "/nvidia3 does not exist (GPUs here: 0, 1, 10, 2)"));
}

TEST_F(SandboxTest, GpuDeviceNodesArePassedThroughWhenPresent) {
  auto nodes = gpu_device_nodes();
  if (nodes.empty()) GTEST_SKIP() << "no NVIDIA device nodes on this machine";
  auto s = sh("ls -l /dev/nvidia*");
  s.devices = nodes;
  auto r = run(s);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_tail;
  for (const auto& n : nodes) EXPECT_THAT(r.stdout_data, HasSubstr(n));

  // And CUDA works through them, as the unprivileged sandbox uid. The GPU
  // runner's torch may live in a venv ($KZOO_PYTHON): bind its prefix.
  const char* venv_python = std::getenv("KZOO_PYTHON");
  std::string python = venv_python ? venv_python : "/usr/bin/python3";
  auto cuda = spec({python, "-c", "import torch\nx = torch.ones(1024, device='cuda')\n"
                                  "print('cuda', torch.cuda.is_available(), float((x * 2).sum()))\n"});
  if (python.rfind("/usr/", 0) != 0) {
    auto prefix = std::filesystem::path(python).parent_path().parent_path().string();
    cuda.ro_binds.push_back({prefix, prefix});
  }
  cuda.devices = nodes;
  cuda.memory_bytes = 16ull << 30;
  cuda.max_pids = 1024;
  auto c = run(cuda);
  EXPECT_EQ(c.exit_code, 0) << c.stderr_tail;
  EXPECT_THAT(c.stdout_data, HasSubstr("cuda True 2048.0"));

  // A job given one GPU (kzoo worker --gpus) sees exactly that one, whatever the machine holds.
  auto only_first = gpu_device_nodes_for({0});
  ASSERT_TRUE(only_first) << only_first.error().message;
  auto one = cuda;
  one.argv = {python, "-c", "import torch\nprint('devices', torch.cuda.device_count())\n"};
  one.devices = *only_first;
  auto seen = run(one);
  EXPECT_EQ(seen.exit_code, 0) << seen.stderr_tail;
  EXPECT_THAT(seen.stdout_data, HasSubstr("devices 1"));
}

TEST(BwrapArgv, NamesEveryProtectionAndOrdersBindsSoLaterOnesCoverEarlierOnes) {
  SandboxSpec s;
  s.argv = {"/usr/bin/python3", "x.py"};
  s.workdir = "/tmp/w";
  s.ro_binds = {{"/tmp/w/.kernel_package", "/kzoo/work/.kernel_package"}};
  s.devices = {"/dev/null"};
  s.env = {{"K", "V"}};
  auto a = bwrap_argv(s, "/usr/bin/bwrap", {7, 8, 9, 10});
  auto has_seq = [&](std::vector<std::string> seq) {
    return std::search(a.begin(), a.end(), seq.begin(), seq.end()) != a.end();
  };
  auto pos = [&](std::vector<std::string> seq) { return std::search(a.begin(), a.end(), seq.begin(), seq.end()) - a.begin(); };
  for (const char* flag : {"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                           "--new-session", "--clearenv"})
    EXPECT_TRUE(has_seq({flag})) << flag;
  EXPECT_TRUE(has_seq({"--cap-drop", "ALL"}));
  EXPECT_TRUE(has_seq({"--setenv", "K", "V"}));
  EXPECT_TRUE(has_seq({"--seccomp", "7"}));
  EXPECT_TRUE(has_seq({"--json-status-fd", "8"}));
  EXPECT_TRUE(has_seq({"--ro-bind-data", "9", "/etc/passwd"}));
  EXPECT_TRUE(has_seq({"--dev-bind", "/dev/null", "/dev/null"}));
  EXPECT_FALSE(has_seq({"--share-net"}));
  EXPECT_LT(pos({"--ro-bind", "/usr", "/usr"}), pos({"--bind", "/tmp/w", "/kzoo/work"}));
  EXPECT_LT(pos({"--bind", "/tmp/w", "/kzoo/work"}), pos({"--ro-bind", "/tmp/w/.kernel_package"}));
  EXPECT_LT(pos({"--ro-bind", "/tmp/w/.kernel_package"}), pos({"--remount-ro", "/"}));
  EXPECT_EQ(a.end() - std::find(a.begin(), a.end(), "--"), 3);
  EXPECT_EQ(a.back(), "x.py");
}

TEST(VisiblePath, TranslatesTheWorkdirAndBindsOnlyInsideTheSandbox) {
  SandboxSpec s;
  s.workdir = "/tmp/w";
  s.ro_binds = {{"/srv/judge", "/kzoo/judge"}};
  EXPECT_EQ(visible_path(s, {}, "/tmp/w/.kzoo/task.json"), "/kzoo/work/.kzoo/task.json");
  EXPECT_EQ(visible_path(s, {}, "/srv/judge"), "/kzoo/judge");
  EXPECT_EQ(visible_path(s, {}, "/tmp/wx"), "/tmp/wx");
  SandboxOptions direct;
  direct.sandboxed = false;
  EXPECT_EQ(visible_path(s, direct, "/tmp/w/.kzoo/task.json"), "/tmp/w/.kzoo/task.json");
}

}  // namespace
}  // namespace kzoo::runner
