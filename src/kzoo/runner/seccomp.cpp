#include "kzoo/runner/seccomp.hpp"

#include <cerrno>
#include <cstring>

#include <seccomp.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kzoo::runner {

const std::vector<std::string>& denied_syscalls() {
  static const std::vector<std::string> names = {
      // other processes' memory and state
      "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
      // kernel attack surface rarely needed by compute code
      "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
      "io_uring_register", "keyctl", "add_key", "request_key",
      // mounts and namespaces (bwrap has finished setting up by the time the filter applies)
      "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
      "open_tree", "mount_setattr", "setns",
      // the machine itself
      "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
      "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
      "syslog", "quotactl", "lookup_dcookie", "vhangup",
  };
  return names;
}

Result<int> build_seccomp_bpf_fd() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return fail("seccomp_init failed (libseccomp)");
  for (const auto& name : denied_syscalls()) {
    int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc < 0) {
      seccomp_release(ctx);
      return fail("cannot add seccomp rule for " + name + ": " + std::strerror(-rc));
    }
  }
  int fd = ::memfd_create("kzoo-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    seccomp_release(ctx);
    return fail(std::string("memfd_create for the seccomp filter failed: ") + std::strerror(errno));
  }
  int rc = seccomp_export_bpf(ctx, fd);
  seccomp_release(ctx);
  if (rc < 0) {
    ::close(fd);
    return fail(std::string("seccomp_export_bpf failed: ") + std::strerror(-rc));
  }
  // Sealed so nothing in between can alter the program bwrap will load.
  (void)::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    return fail(std::string("lseek on the seccomp filter failed: ") + std::strerror(errno));
  }
  return fd;
}

}  // namespace kzoo::runner
