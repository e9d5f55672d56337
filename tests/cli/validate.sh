#!/bin/bash
# `kzoo validate`, `kzoo inspect` and `kzoo pack` driven as a user would:
# packages and tarballs built in a temp dir (hostile ones with python3),
# exit codes checked, every --json stdout parsed as exactly one document.
# Usage: validate.sh KZOO_BINARY SOURCE_DIR
set -u
KZOO=${1:?usage: validate.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: validate.sh KZOO_BINARY SOURCE_DIR}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

T=$(mktemp -d /tmp/kzoo_cli_validate.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILS=0
CHECKS=0

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# expect CODE CMD... : runs CMD, checks its exit code; stdout in $T/out, stderr in $T/err.
expect() {
  local want=$1; shift
  CHECKS=$((CHECKS + 1))
  "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "exit $got (want $want): $*"
    sed 's/^/    out: /' "$T/out" | head -20
    sed 's/^/    err: /' "$T/err" | head -20
  fi
}

# json_check EXPR : $T/out must be one JSON document and EXPR (Python, over d) true.
json_check() {
  CHECKS=$((CHECKS + 1))
  if ! "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
      "$T/out" "$1" 2>"$T/pyerr"; then
    fail "json check failed: $1"
    head -c 2000 "$T/out" | sed 's/^/    out: /'
    sed 's/^/    py: /' "$T/pyerr"
  fi
}

KD="$T/kd"
ID=hopper/norm/softmax/fp32/triton
PKG="$KD/$ID"
make_package() {  # make_package DIR KERNEL_ID
  local d=$1 id=$2
  mkdir -p "$d/.kernel_package" "$d/src"
  cat >"$d/.kernel_package/desc.yaml" <<'EOF'
schema_version: "1"
name: softmax
category: {arch: hopper, op_class: norm, sub_class: softmax, quant: fp32}
summary: Row softmax
description: Softmax over the last dimension of a 2-D fp32 tensor.
io_signature:
  - {name: x, direction: in, dtype: float32, shape: [M, N]}
  - {name: y, direction: out, dtype: float32, shape: [M, N]}
quantization: {scheme: none}
reference_sources:
  - {kind: task, ref: softmax}
EOF
  cat >"$d/.kernel_package/bench_result.yaml" <<EOF
schema_version: "1"
kernel_id: $id
cases: []
EOF
  cat >"$d/.kernel_package/build_test_env.py" <<'EOF'
from kzoo_judge.entry import build_test_env

if __name__ == "__main__":
    build_test_env()
EOF
  cat >"$d/.kernel_package/benchmark.py" <<'EOF'
import sys

KERNEL_ZOO_TEST_CASE_METAS = [
    {
        "test_case_id": "m4096_n4096",
        "params": {"workload": "synthetic", "shape": {"M": 4096, "N": 4096}},
        "primary_metric": "latency_us",
        "metrics": [{"name": "latency_us", "unit": "us", "direction": "lower"}],
        "tolerance": {"correctness_atol": 1e-3, "correctness_rtol": 1e-3},
    },
]

if __name__ == "__main__":
    from kzoo_judge.entry import run_package_benchmark

    sys.exit(run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS))
EOF
  cat >"$d/src/softmax.py" <<'EOF'
import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    # One pass over each row; a real kernel would live here.
    return torch.softmax(x, dim=-1)
EOF
  printf '# softmax\n\nA row softmax.\n' >"$d/README.md"
}

mkdir -p "$KD" && touch "$KD/.kernel_data"
make_package "$PKG" "$ID"

# ---------------------------------------------------------------- a valid package
expect 0 "$KZOO" validate "$PKG"
grep -q "^VALID" "$T/out" || fail "human output lacks VALID: $(cat "$T/out")"
expect 0 "$KZOO" validate "$PKG" --json
json_check 'd["valid"] is True and d["kind"] == "package" and d["kernel_id"] == "'$ID'" and d["violations"] == []'
expect 0 "$KZOO" inspect "$PKG" --json
json_check 'd["kernel_id"] == "'$ID'" and d["has_dot_kernel_package"] and len(d["required_files_present"]) == 4 and d["required_files_missing"] == []'
expect 0 "$KZOO" inspect "$PKG"
expect 0 "$KZOO" validate "$PKG" --root "$KD" --kernel-id "$ID"
expect 1 "$KZOO" validate "$PKG" --kernel-id other/id --json
json_check 'not d["valid"] and any(v["rule"] == "kernel-id.mismatch" for v in d["violations"])'

# Outside any kernel_data root: --kernel-id supplies the ID, else usage error.
make_package "$T/loose" "$ID"
expect 0 "$KZOO" validate "$T/loose" --kernel-id "$ID"
expect 2 "$KZOO" validate "$T/loose"
grep -q "loose" "$T/err" || fail "usage error does not name the path: $(cat "$T/err")"
expect 2 "$KZOO" inspect "$T/loose" --json

# ---------------------------------------------------------------- pack
expect 0 "$KZOO" pack "$PKG" -o "$T/a.tar.gz"
[ -s "$T/a.tar.gz" ] || fail "pack wrote nothing"
expect 2 "$KZOO" pack "$PKG" -o "$T/a.tar.gz"
expect 0 "$KZOO" pack "$PKG" -o "$T/a.tar.gz" --force
expect 0 "$KZOO" pack "$PKG" -o "$T/b.tar.gz"
cmp -s "$T/a.tar.gz" "$T/b.tar.gz" || fail "pack is not deterministic"
expect 2 "$KZOO" pack "$PKG" -o "$T/c.zip"
expect 2 "$KZOO" pack "$PKG" -o "$PKG/src/self.tar.gz"
expect 0 "$KZOO" validate "$T/a.tar.gz" --json
json_check 'd["valid"] and d["kind"] == "tarball" and d["kernel_id"] == "'$ID'"'
expect 0 "$KZOO" validate "$T/a.tar.gz" --kernel-id "$ID"
expect 1 "$KZOO" validate "$T/a.tar.gz" --kernel-id other/id --json
json_check 'not d["valid"] and len(d["violations"]) >= 1'
# What tar itself lists: every entry under the kernel ID.
tar tzf "$T/a.tar.gz" | grep -v "^$ID" && fail "tarball entry outside $ID"

# ---------------------------------------------------------------- hostile packages
# hostile NAME RULE SETUP-COMMAND : copy the valid package, apply SETUP inside
# it; validate must exit 1 with JSON listing a violation of RULE; pack must refuse.
hostile() {
  local name=$1 rule=$2; shift 2
  local d="$KD/hostile/$name/pkg"
  mkdir -p "$(dirname "$d")" && cp -r "$PKG" "$d"
  sed -i "s#^kernel_id: .*#kernel_id: hostile/$name/pkg#" "$d/.kernel_package/bench_result.yaml"
  (cd "$d" && eval "$*") || fail "setup of $name failed"
  expect 1 "$KZOO" validate "$d" --json
  json_check 'not d["valid"] and "'"$rule"'" in [v["rule"] for v in d["violations"]]'
  expect 1 "$KZOO" pack "$d" -o "$T/$name.tar.gz"
  [ -e "$T/$name.tar.gz" ] && fail "pack wrote a tarball for invalid package $name"
}
hostile weights evidence.name 'printf "x" > src/weights.pt'
hostile torch_zip_as_py evidence.magic "$PY"' -c "
import zipfile; z = zipfile.ZipFile(\"src/kernel.py\", \"w\"); z.writestr(\"archive/data.pkl\", b\"\\x80\\x02}q\\x00.\"); z.close()"'
hostile numpy_as_txt evidence.magic "$PY"' -c "
open(\"src/notes.txt\", \"wb\").write(b\"\\x93NUMPY\\x01\\x00v\\x00{\\\"descr\\\": \\\"<f4\\\"}\" + bytes(64))"'
hostile elf_as_cu evidence.magic "$PY"' -c "open(\"src/kernel.cu\", \"wb\").write(b\"\\x7fELF\\x02\\x01\\x01\" + bytes(57))"'
hostile pickle_as_py evidence.magic "$PY"' -c "import pickle; open(\"src/cache.py\", \"wb\").write(pickle.dumps([1.5] * 10, protocol=4))"'
hostile csv_as_md evidence.table 'printf "size,ms\n1024,0.12\n2048,0.45\n4096,1.78\n8192,7.01\n16384,28.3\n" > src/notes.md'
hostile nvcc_log_as_txt evidence.log 'printf "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function '\''k'\'' for '\''sm_90'\''\nptxas info    : Used 32 registers\n" > src/build.txt'
hostile base64_in_py evidence.encoded-blob "$PY"' -c "
import base64, random; r = random.Random(1)
open(\"src/blob.py\", \"w\").write(\"W = \\\"\" + base64.b64encode(bytes(r.randrange(256) for _ in range(6000))).decode() + \"\\\"\\n\")"'
hostile json_trace evidence.metadata 'echo "{\"traceEvents\": []}" > src/trace.json'
# Summarised evidence (issue 13): prose figures, a dict of per-shape timings, pasted floats.
hostile notes_summary evidence.summary 'printf "# Notes\n\nThe kernel ran at a median 412.3 us (p90 418.9 us): 2.61 TB/s, 78%% of roofline.\n" > src/NOTES.md'
hostile timings_dict evidence.summary 'printf "R = {\n    (4096, 4096): {\"median_us\": 102.9, \"gbps\": 2608.4},\n    (8192, 8192): {\"median_us\": 412.3, \"gbps\": 2604.9},\n}\n" > src/results.py'
hostile pasted_floats evidence.encoded-blob "$PY"' -c "
import random; r = random.Random(3)
open(\"src/samples.py\", \"w\").write(\"S = [\\n\" + \"\".join(\"    \" + \", \".join(\"%.4f\" % r.uniform(0.3, 0.6) for _ in range(8)) + \",\\n\" for _ in range(60)) + \"]\\n\")"'
hostile missing_desc package.missing-file 'rm .kernel_package/desc.yaml'
hostile no_source package.no-source 'rm -r src'
hostile bad_yaml yaml.syntax 'printf "name: [unclosed\n" > .kernel_package/desc.yaml'
hostile bad_metas package.primary-metric 'sed -i "s/\"primary_metric\": \"latency_us\"/\"primary_metric\": \"tflops\"/" .kernel_package/benchmark.py'
hostile stray_top package.unexpected-entry 'mkdir results && echo hi > results/run.md'
hostile symlink tree.symlink 'ln -s /etc/passwd src/passwd.py'
hostile pycache evidence.name 'mkdir -p src/__pycache__ && printf "x = 1\n" > src/__pycache__/k.py'

# ---------------------------------------------------------------- hostile tarballs
# Each is built by python3's tarfile, then validated: exit 1, JSON lists violations.
hostile_tar() {  # hostile_tar NAME RULE PYTHON-LINES
  local name=$1 rule=$2 script=$3
  (cd "$T" && "$PY" -c "
import io, tarfile
def add(t, name, data=b'x', **kw):
    ti = tarfile.TarInfo(name); ti.size = len(data)
    for k, v in kw.items(): setattr(ti, k, v)
    t.addfile(ti, io.BytesIO(data) if ti.isreg() else None)
t = tarfile.open('$name.tar.gz', 'w:gz')
base = '$ID/'
for f in ['.kernel_package/desc.yaml', '.kernel_package/bench_result.yaml', '.kernel_package/build_test_env.py', '.kernel_package/benchmark.py', 'src/softmax.py']:
    t.add('$PKG/' + f, arcname=base + f)
$script
t.close()") || fail "building tarball $name failed"
  expect 1 "$KZOO" validate "$T/$name.tar.gz" --json
  json_check 'not d["valid"] and d["kind"] == "tarball" and "'"$rule"'" in [v["rule"] for v in d["violations"]]'
}
hostile_tar dotdot tar.dotdot "add(t, base + '../../../evil.py')"
hostile_tar absolute tar.absolute-path "add(t, '/etc/evil.py')"
hostile_tar symlink tar.symlink "add(t, base + 'src/link.py', b'', type=tarfile.SYMTYPE, linkname='/etc/passwd')"
hostile_tar hardlink tar.hardlink "add(t, base + 'src/hard.py', b'', type=tarfile.LNKTYPE, linkname=base + 'src/softmax.py')"
hostile_tar fifo tar.special "add(t, base + 'src/fifo', b'', type=tarfile.FIFOTYPE)"
hostile_tar evidence evidence.magic "add(t, base + 'src/golden.npy', b'\\x93NUMPY\\x01\\x00' + bytes(100))"
hostile_tar second_top tar.top-level "add(t, 'other/file.py')"
printf 'not a tarball\n' >"$T/plain.tar.gz"
expect 1 "$KZOO" validate "$T/plain.tar.gz" --json
json_check 'not d["valid"] and "tar.not-gzip" in [v["rule"] for v in d["violations"]]'

# ---------------------------------------------------------------- single documents
expect 0 "$KZOO" validate "$PKG/.kernel_package/desc.yaml" --json
json_check 'd["valid"] and d["kind"] == "desc"'
expect 0 "$KZOO" validate "$PKG/.kernel_package/bench_result.yaml" --kernel-id "$ID"
expect 1 "$KZOO" validate "$PKG/.kernel_package/bench_result.yaml" --kernel-id other/id --json
json_check 'not d["valid"] and d["kind"] == "bench_result"'
mkdir -p "$T/docs"
printf 'name: x\n' >"$T/docs/desc.yaml"
expect 1 "$KZOO" validate "$T/docs/desc.yaml" --json
json_check 'not d["valid"] and all("desc.yaml" in v["path"] for v in d["violations"])'
printf 'a: 1\n' >"$T/docs/other.yaml"
expect 2 "$KZOO" validate "$T/docs/other.yaml"
grep -q "desc.yaml" "$T/err" || fail "unknown-kind error does not say what is understood"
printf '{"name": ' >"$T/docs/task.json"
expect 1 "$KZOO" validate "$T/docs/task.json" --json
json_check 'not d["valid"] and d["kind"] == "task"'
printf '{}' >"$T/docs/empty_task.json"
expect 1 "$KZOO" validate "$T/docs/empty_task.json" --json
json_check 'not d["valid"] and len(d["violations"]) >= 1'
for task in "$SRC"/catalog/tasks/*/task.json; do
  [ -e "$task" ] || continue
  expect 0 "$KZOO" validate "$task"
done
# The catalog's own packages (baselines) must pass what submissions must pass.
while IFS= read -r dot; do
  expect 0 "$KZOO" validate "$(dirname "$dot")"
done < <(find "$SRC/catalog/kernel_data" -type d -name .kernel_package 2>/dev/null)

# ---------------------------------------------------------------- usage and I/O errors
expect 2 "$KZOO" validate "$T/does-not-exist"
grep -q "does-not-exist" "$T/err" || fail "I/O error does not name the path"
expect 2 "$KZOO" validate
expect 2 "$KZOO" pack "$PKG"
expect 2 "$KZOO" inspect "$T/does-not-exist"

echo "$CHECKS checks, $FAILS failures"
[ "$FAILS" = 0 ]
