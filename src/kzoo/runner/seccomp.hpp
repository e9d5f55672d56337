// The seccomp filter every sandboxed process runs under, built with
// libseccomp and handed to bubblewrap (`--seccomp FD`) as compiled BPF.
//
// Policy: allow by default, deny a list of system calls with EPERM. An
// allow-list would be tighter but CUDA, PyTorch and Triton use a wide and
// version-dependent set of calls; the deny-list (LIBNOTES) removes the calls
// that let code inspect or tamper with other processes (ptrace,
// process_vm_readv/writev, kcmp, pidfd_getfd), widen the kernel's attack
// surface (bpf, perf_event_open, userfaultfd, io_uring_*, keyctl/add_key/
// request_key), or change the mount or kernel state (mount, umount2,
// pivot_root, fsopen/fsmount/move_mount/open_tree, kexec_*, module loading,
// reboot, swapon/swapoff, acct, settimeofday, ...).
//
// System calls made through another ABI than the native one (i386 `int 0x80`,
// x32) fail the filter's architecture check and kill the process (libseccomp's
// default bad-architecture action), so the deny-list cannot be sidestepped.
#pragma once

#include <string>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

// The names of the denied system calls (those unknown on this architecture
// are skipped when building the filter).
const std::vector<std::string>& denied_syscalls();

// Compiles the filter and returns a file descriptor (a sealed memfd, offset
// 0, close-on-exec set) holding the BPF program, for bwrap --seccomp. The
// caller owns the descriptor.
Result<int> build_seccomp_bpf_fd();

}  // namespace kzoo::runner
