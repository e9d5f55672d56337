#include "kzoo/task/skeleton.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "kzoo/task/lint.hpp"

namespace kzoo::task {

namespace fs = std::filesystem;

namespace {

// Writes a new file; never replaces one (O_EXCL).
Result<void> write_new(const fs::path& p, const std::string& text) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return fail(fmt::format("cannot create {}: {}", p.string(), std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return fail(fmt::format("cannot write {}: {}", p.string(), std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return fail(fmt::format("cannot write {}: {}", p.string(), std::strerror(errno)));
  return ok();
}

}  // namespace

std::string entry_point_for(const std::string& name) {
  std::string e = name;
  for (char& c : e)
    if (c == '-') c = '_';
  if (!e.empty() && e[0] >= '0' && e[0] <= '9') e = "op_" + e;
  return e;
}

std::string skeleton_task_json(const std::string& name) {
  const std::string f = entry_point_for(name);
  // The graded shape moves 16384 x 10240 x 8 bytes = 1.34 GB: 280 us at the
  // h200 class's 4.8 TB/s, above lint's 250 us. The correctness shapes
  // include a 1x1 and ragged sizes; the measure shape is what the CPU times.
  return fmt::format(R"JSON({{
  "name": "{name}",
  "family": "Elementwise (replace: the catalog grouping)",
  "description": "REPLACE: what the kernel computes. The skeleton is SiLU, y = x * sigmoid(x), elementwise over a float32 matrix.",
  "keywords": ["elementwise", "activation"],
  "difficulty": {{
    "tier": "T1",
    "rationale": "REPLACE: what is hard to improve on the best available implementation."
  }},
  "definition": {{
    "entry_point": "{f}",
    "module": "{f}.py",
    "signature": "{f}(x: float32[R, C]) -> float32[R, C]",
    "inputs": [
      {{"name": "x", "shape": ["R", "C"], "dtype": "float32"}}
    ],
    "outputs": [
      {{"name": "y", "shape": ["R", "C"], "dtype": "float32"}}
    ],
    "reference": {{
      "language": "python/pytorch",
      "source": "import torch\n\n\ndef {f}(x):\n    # The numerical specification: correct, deliberately unfused, slow is fine.\n    # REPLACE with the operator's maths (docs/TASKS.md, Conventions).\n    xf = x.to(torch.float32)\n    return (xf * torch.sigmoid(xf)).to(x.dtype)\n"
    }},
    "read_only_inputs": true
  }},
  "workloads": {{
    "synthetic": {{
      "source": "synthetic",
      "dims": ["R", "C"],
      "graded": [
        [16384, 10240]
      ],
      "correctness": [
        [1, 1],
        [3, 17],
        [1000, 4097],
        [7, 65537]
      ],
      "measure": [
        [256, 512]
      ]
    }}
  }},
  "grading": {{
    "metric": "GB/s",
    "reward": {{
      "kind": "absolute-uncapped",
      "canonical_work": "R*C*4*2"
    }},
    "tolerance": {{
      "value": 1e-05,
      "comparator": "relative-frobenius"
    }}
  }},
  "environment": {{
    "gpus": 1,
    "min_compute_capability": "9.0",
    "offline": true,
    "note": "The exact GPU is not specified; query the device."
  }}
}}
)JSON",
                     fmt::arg("name", name), fmt::arg("f", f));
}

std::string skeleton_independent_py(const std::string& name) {
  return fmt::format(R"PY("""independent(*inputs) for {name}: the task's outputs computed ANOTHER way.

`kzoo task calibrate` measures E, the comparator's error between this and the
reference, over seeds and shapes: what honest numerical differences cost. The
tolerance must sit above 2E. Make it really independent -- another formula at
another precision -- not the reference copied. Add more variants as
independent_<what>.py: calibration takes the worst of them.
"""
import torch


def independent(x):
    x64 = x.to(torch.float64)
    return (x64 / (1.0 + torch.exp(-x64))).to(x.dtype)
)PY",
                     fmt::arg("name", name));
}

std::string skeleton_drop_py(const std::string& name) {
  return fmt::format(R"PY("""drop(*inputs) for {name}: a plausible kernel that skips the task's point.

`kzoo task calibrate` measures D, the comparator's error between this and the
reference (the smallest seen): the tolerance must sit below D/10, or a kernel
that ignores what the task is about would pass. It must differ from the
reference at EVERY correctness shape; calibrate refuses to store a D of about 0
and names the shapes where it coincides. Add variants as drop_<what>.py.
"""
import torch


def drop(x):
    # The gate dropped: ReLU where the task asks for SiLU.
    return torch.relu(x)
)PY",
                     fmt::arg("name", name));
}

Result<SkeletonWritten> write_task_skeleton(const std::string& catalog_dir, const std::string& name) {
  static const std::regex kName("^[a-z0-9]+(-[a-z0-9]+)*$");
  if (!std::regex_match(name, kName) || name.size() > 64)
    return fail(fmt::format("\"{}\" is not a task name: lower-case letters and digits in words joined by single "
                            "dashes, at most 64 characters (the KBench schema's name), e.g. \"fused-silu\"",
                            name));
  SkeletonWritten out;
  const fs::path catalog(catalog_dir);
  const fs::path dir = catalog / "tasks" / name;
  out.task_dir = dir.string();
  std::error_code ec;
  if (fs::exists(dir, ec))
    return fail(fmt::format("{} exists already: choose another name, or edit that task", dir.string()));
  if (fs::exists(catalog, ec) && !fs::is_directory(catalog, ec))
    return fail(fmt::format("{} is not a directory: give the catalog folder (it holds tasks/ and kernel_data/)",
                            catalog_dir));
  // A catalog that does not exist yet gets its whole layout; one that does
  // gets only what it lacks, and nothing it has is touched.
  fs::create_directories(catalog / "kernel_data", ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", (catalog / "kernel_data").string(), ec.message()));
  if (!fs::exists(catalog / "kernel_data" / ".kernel_data", ec)) {
    if (auto r = write_new(catalog / "kernel_data" / ".kernel_data", ""); !r) return tl::unexpected(r.error());
    out.files.push_back((catalog / "kernel_data" / ".kernel_data").string());
  }
  if (!fs::exists(catalog / "device_classes.json", ec)) {
    std::ifstream src(default_device_classes_path(), std::ios::binary);
    if (src) {
      std::string text((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
      if (auto r = write_new(catalog / "device_classes.json", text); !r) return tl::unexpected(r.error());
      out.files.push_back((catalog / "device_classes.json").string());
    }
  }
  fs::create_directories(catalog / "tasks", ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", (catalog / "tasks").string(), ec.message()));
  if (!fs::create_directory(dir, ec) || ec)
    return fail(fmt::format("cannot create {}: {}", dir.string(), ec ? ec.message() : "it exists"));
  for (const auto& [file, text] : {std::pair{"task.json", skeleton_task_json(name)},
                                   std::pair{"independent.py", skeleton_independent_py(name)},
                                   std::pair{"drop.py", skeleton_drop_py(name)}}) {
    if (auto r = write_new(dir / file, text); !r) return tl::unexpected(r.error());
    out.files.push_back((dir / file).string());
  }
  return out;
}

}  // namespace kzoo::task
