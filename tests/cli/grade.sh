#!/usr/bin/env bash
# End-to-end `kzoo grade` with the real judge and the catalog's packages.
# Usage: grade.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?kzoo binary}
SRC=${2:?source dir}
CATALOG="$SRC/catalog"
fails=0
check() {  # check NAME EXPECTED_EXIT ACTUAL_EXIT
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: exit $3, expected $2"; fails=$((fails + 1)); fi
}

# The cheapest baseline on a CPU: softmax when the catalog has it, else the first.
all=$(find "$CATALOG/kernel_data" -type d -name .kernel_package 2>/dev/null | sort)
pkg=$(echo "$all" | grep -m1 softmax || echo "$all" | head -1)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/prerequisite.sh"
[ -n "$pkg" ] || require_prerequisite "no package in $CATALOG/kernel_data"
[ -d "$SRC/judge/kzoo_judge" ] || require_prerequisite "no judge in $SRC/judge"
[ -x "$(bwrap_path)" ] || require_prerequisite "bubblewrap is not installed ($(bwrap_path))"
pkg=$(dirname "$pkg")
id=${pkg#"$CATALOG/kernel_data/"}
G=(grade --catalog "$CATALOG" --judge-dir "$SRC/judge")
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

# 1. The catalog's own baseline package is accepted, and --json prints one document. With
#    --judge-options '{"trace": true}' the judge logs every timed batch (a diagnostic).
"$KZOO" "${G[@]}" "$pkg" --json --iterations 3 --timeout 900 -v --judge-options '{"trace": true}' \
  >"$tmp/out.json" 2>"$tmp/err.txt"
rc=$?
check "baseline $id is accepted" 0 $rc
[ $rc = 0 ] || tail -30 "$tmp/err.txt"
# Each batch with its Unix time, to be read against clocks sampled beside the grade.
grep -qE "kzoo-judge: trace: t=[0-9]+\.[0-9]{3} batch of" "$tmp/err.txt" || { echo "FAIL --judge-options '{\"trace\": true}' logged no timed batch with its time"; fails=$((fails + 1)); }
/usr/bin/python3 - "$tmp/out.json" "$id" <<'PY' || { echo "FAIL the --json output is not one benchmark document"; fails=$((fails + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["kernel_id"] == sys.argv[2], doc["kernel_id"]
assert doc["overall"]["accept"] is True
assert doc["cases"], "no cases"
PY

# 2. Same kernel ID, harness forged to print an unsigned "accept": the catalog's
#    trusted harness is run instead (and a warning says so).
mkdir -p "$tmp/kd/$id"
touch "$tmp/kd/.kernel_data"
cp -r "$pkg/." "$tmp/kd/$id/"
cat >"$tmp/kd/$id/.kernel_package/build_test_env.py" <<'PY'
import json, sys
print(json.dumps({"forged": True}))
PY
"$KZOO" "${G[@]}" "$tmp/kd/$id" --iterations 3 --timeout 900 >"$tmp/out2.txt" 2>"$tmp/err2.txt"
check "a forged harness under the catalog's kernel ID is replaced by the trusted one" 0 $?
grep -q "differs from the catalog's" "$tmp/err2.txt" || { echo "FAIL no warning about the replaced harness"; fails=$((fails + 1)); }

# 3. Not in the catalog, harness forged to print an unsigned accepting document: rejected as forged.
mkdir -p "$tmp/kd2/x/forger"
touch "$tmp/kd2/.kernel_data"
cp -r "$pkg/." "$tmp/kd2/x/forger/"
# Keep the package's own test-case literal (so inspection passes) and print a
# forged, unsigned, accepting document instead of running the judge.
/usr/bin/python3 - "$tmp/kd2/x/forger/.kernel_package/benchmark.py" <<'PY'
import ast, sys
path = sys.argv[1]
src = open(path).read()
node = next(n for n in ast.parse(src).body if isinstance(n, ast.Assign)
            and any(getattr(t, "id", None) == "KERNEL_ZOO_TEST_CASE_METAS" for t in n.targets))
metas = ast.get_source_segment(src, node)
open(path, "w").write("import json\n" + metas + "\n" + """
print(json.dumps({"schema_version": "1", "kernel_id": "x/forger", "ran_at": "2026-01-01T00:00:00Z",
                  "runner_id": "me", "arch": "cpu",
                  "overall": {"accept": True, "accept_reason": "trust me", "build_ok": True}, "cases": []}))
""")
PY
sed -i 's|kernel_id: .*|kernel_id: x/forger|' "$tmp/kd2/x/forger/.kernel_package/bench_result.yaml"
"$KZOO" "${G[@]}" "$tmp/kd2/x/forger" --json >"$tmp/out3.json" 2>"$tmp/err3.txt"
rc=$?
if grep -q '"reason": "the package breaks' "$tmp/out3.json"; then
  check "a forged harness outside the catalog is rejected (by inspection)" 1 $rc
else
  check "a forged unsigned result is rejected" 1 $rc
  grep -q "untrusted harness" "$tmp/err3.txt" || { echo "FAIL no 'untrusted harness' warning"; fails=$((fails + 1)); }
  grep -q "signature" "$tmp/out3.json" || { echo "FAIL the reason does not name the signature"; fails=$((fails + 1)); }
fi

# 4. A copy outside any kernel_data root, named with --kernel-id, is graded as that kernel (with the
#    catalog's trusted harness), and --against runs the worker's A/B: the same source is no improvement.
mkdir -p "$tmp/copy"
cp -r "$pkg/." "$tmp/copy/"
"$KZOO" "${G[@]}" "$tmp/copy" --iterations 3 --timeout 900 >"$tmp/out4.txt" 2>"$tmp/err4.txt"
check "a copy outside the catalog without --kernel-id is a usage error naming --kernel-id" 2 $?
grep -q -- "--kernel-id" "$tmp/err4.txt" || { echo "FAIL the error does not name --kernel-id"; fails=$((fails + 1)); }
"$KZOO" "${G[@]}" "$tmp/copy" --kernel-id "$id" --against "$pkg" --iterations 8 --timeout 900 --json \
  >"$tmp/out5.json" 2>"$tmp/err5.txt"
rc=$?
check "the same source against itself is rejected, as the worker rejects it" 1 $rc
/usr/bin/python3 - "$tmp/out5.json" "$id" <<'PY' || { echo "FAIL --against did not decide as the worker does"; fails=$((fails + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
g = doc["kzoo_grade"]
assert doc["kernel_id"] == sys.argv[2] and g["kernel_id"] == sys.argv[2]
assert g["trusted_harness"] is True and g["had_incumbent"] is True, g
assert all("speedup" in c for c in doc["cases"]), "the judge timed no A/B"
d = g["decision"]
assert d["outcome"] == "rejected" and g["status"] == "rejected", d
assert any("not faster than the incumbent" in r for r in d["reasons"]), d["reasons"]
# --iterations below the rules' timed runs: the board says the check would not count.
assert any("does not count on the board" in n for n in d["board_notes"]), d["board_notes"]
PY

# 5. The task's environment is honoured or refused, never ignored: a GPU below its compute capability.
cat >"$tmp/nvidia-smi" <<'SH'
#!/bin/sh
echo "NVIDIA A100-SXM4-80GB, 8.0"
SH
chmod +x "$tmp/nvidia-smi"
KZOO_NVIDIA_SMI="$tmp/nvidia-smi" "$KZOO" "${G[@]}" "$pkg" --device cuda >"$tmp/out6.txt" 2>"$tmp/err6.txt"
check "a GPU below the task's min_compute_capability is refused" 2 $?
grep -q "compute capability 9.0 or more" "$tmp/out6.txt" || { echo "FAIL the refusal does not name the capability"; cat "$tmp/out6.txt"; fails=$((fails + 1)); }

# 6. A baseline is the call a PyTorch user makes, and may call a library the reference does not:
#    the worker decides a `kind: baseline` check by correctness and the guardrails, and so does
#    --baseline. A softmax that also goes through a (BLAS-backed) matmul fails the library gate
#    as a submission and passes as a baseline (--no-rules: the board counts no check of 3 timed runs).
mkdir -p "$tmp/blas"
cp -r "$pkg/." "$tmp/blas/"
cat >>"$tmp/blas/src/softmax.py" <<'PY'


_plain = softmax


def softmax(x):
    y = _plain(x)
    return torch.matmul(y.unsqueeze(-1), torch.ones(1, 1, dtype=y.dtype, device=y.device)).squeeze(-1)
PY
"$KZOO" "${G[@]}" "$tmp/blas" --kernel-id "$id" --iterations 3 --timeout 900 >"$tmp/out8.txt" 2>"$tmp/err8.txt"
check "a submission calling a library the reference does not is rejected" 1 $?
grep -q "library calls the reference does not make" "$tmp/out8.txt" || { echo "FAIL the rejection does not name the library gate"; cat "$tmp/out8.txt"; fails=$((fails + 1)); }
"$KZOO" "${G[@]}" "$tmp/blas" --kernel-id "$id" --baseline --no-rules --iterations 3 --timeout 900 --json >"$tmp/out9.json" 2>"$tmp/err9.txt"
check "the same package graded as the eager baseline is accepted" 0 $?
/usr/bin/python3 - "$tmp/out9.json" <<'PY' || { echo "FAIL --baseline did not decide as the worker decides a baseline"; fails=$((fails + 1)); }
import json, sys
doc = json.load(open(sys.argv[1]))
g = doc["kzoo_grade"]
assert g["status"] == "accepted" and "baseline's check passes" in g["summary"], g["summary"]
assert any(c["gates"]["library-calls"]["pass"] is False for c in doc["cases"]), "the gate did not fail"
assert g["decision"]["outcome"] == "accepted", g["decision"]
PY
"$KZOO" "${G[@]}" "$pkg" --baseline --against "$pkg" >"$tmp/out10.txt" 2>&1
check "--baseline with --against is a usage error" 2 $?

# 7. Usage errors exit 2.
"$KZOO" "${G[@]}" "$tmp/does-not-exist" >/dev/null 2>&1
check "a missing path is an error" 2 $?
"$KZOO" "${G[@]}" "$pkg" --device tpu >/dev/null 2>&1
check "an unknown device is a usage error" 2 $?
"$KZOO" "${G[@]}" "$pkg" --judge-options '["trace"]' >"$tmp/out7.txt" 2>&1
check "--judge-options that is not a JSON object is a usage error" 2 $?
grep -q "one JSON object" "$tmp/out7.txt" || { echo "FAIL the refusal does not say what --judge-options takes"; cat "$tmp/out7.txt"; fails=$((fails + 1)); }

# 8. `kzoo prepare` fills the bytecode cache a grade then reads (runner/bytecode_cache.hpp): the
#    grade's judge finds torch compiled there and warms nothing again (its stamp is the grade's).
cache="$tmp/bytecode"
"$KZOO" prepare --judge-dir "$SRC/judge" --bytecode-cache "$cache" --json >"$tmp/prep1.json" 2>"$tmp/prep1.err"
check "kzoo prepare fills a fresh bytecode cache" 0 $?
"$KZOO" prepare --judge-dir "$SRC/judge" --bytecode-cache "$cache" --json >"$tmp/prep2.json" 2>"$tmp/prep2.err"
check "kzoo prepare of a current cache" 0 $?
/usr/bin/python3 - "$tmp/prep1.json" "$tmp/prep2.json" "$cache" <<'PY' || { echo "FAIL kzoo prepare's documents"; cat "$tmp/prep1.err" "$tmp/prep2.err"; fails=$((fails + 1)); }
import json, sys
first, second = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert first["bytecode_cache"] == sys.argv[3] and first["warmed"] is True, first
assert second["bytecode_cache"] == sys.argv[3] and second["warmed"] is False, second
PY
stamps_before=$(ls -l --time-style=full-iso "$cache/stamps" 2>&1)
KZOO_BYTECODE_CACHE="$cache" "$KZOO" "${G[@]}" "$pkg" --iterations 3 --timeout 900 -v >"$tmp/out11.txt" 2>"$tmp/err11.txt"
check "a grade after kzoo prepare is accepted" 0 $?
grep -qF "torch's bytecode: current (kzoo's cache $cache)" "$tmp/err11.txt" || { echo "FAIL the grade's judge did not load torch from the prepared cache"; grep -m3 "bytecode" "$tmp/err11.txt"; fails=$((fails + 1)); }
[ "$(ls -l --time-style=full-iso "$cache/stamps" 2>&1)" = "$stamps_before" ] || { echo "FAIL the grade warmed the cache again (another stamp than kzoo prepare's)"; ls -l "$cache/stamps"; fails=$((fails + 1)); }
# --refresh warms a current cache again (after upgrading a package the stamp does not watch).
"$KZOO" prepare --judge-dir "$SRC/judge" --bytecode-cache "$cache" --refresh --json >"$tmp/prep4.json" 2>"$tmp/prep4.err"
check "kzoo prepare --refresh" 0 $?
/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["warmed"] is True, d' "$tmp/prep4.json" \
  || { echo "FAIL kzoo prepare --refresh did not warm the cache again"; cat "$tmp/prep4.err"; fails=$((fails + 1)); }
KZOO_BYTECODE_CACHE=off "$KZOO" prepare --judge-dir "$SRC/judge" >"$tmp/prep3.txt" 2>&1
check "kzoo prepare with the cache turned off is an error" 2 $?
grep -q "no bytecode cache to fill" "$tmp/prep3.txt" || { echo "FAIL kzoo prepare did not say the cache is off"; cat "$tmp/prep3.txt"; fails=$((fails + 1)); }

[ $fails = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all grade checks passed"
