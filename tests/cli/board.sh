#!/usr/bin/env bash
# The benchmark board end to end (issue 11, "Done when"), as a user runs it:
#   1. `kzoo init` (writes scienceslack.json and tags it `checks`);
#   2. grade the eager baselines (`kzoo baselines --wait`);
#   3. accept a faster softmax on route fast-softmax and a faster RMSNorm on
#      route fast-rmsnorm (adopt: auto, so both reach main too);
#   4. check the board score, per-kernel speed-ups and verified vs reported
#      against a hand computation from the checks' own records (1e-9);
#   5. change the rules on main without moving `checks`: nothing changes;
#   6. move the tag: the new rules take effect;
#   7. raise the version: a new, empty board, and the old one kept as it was.
# Real parts throughout: kzoo serve + kzoo worker (CPU, bubblewrap, the judge),
# a real git clone and push for the maintainers' edits.
# Usage: board.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: board.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: board.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SOFT=h200/norm/softmax/bf16/softmax_eager
RMS=h200/norm/rmsnorm/bf16/rmsnorm_residual_eager

T=$(mktemp -d /tmp/kzoo_cli_board.XXXXXX)
chmod 755 "$T"
D="$T/data"
SERVE_PID=
WORKER_PID=
RUN_TO_TIMEOUT=900
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
cleanup() {
  stop "$WORKER_PID"
  stop "$SERVE_PID"
  if [ "$FAILS" != 0 ]; then
    echo "-- serve.log (tail)"; tail -n 20 "$T/serve.log" 2>/dev/null
    echo "-- worker.log (tail)"; tail -n 60 "$T/worker.log" 2>/dev/null
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM
G() { git --git-dir "$D/kernel_data.git" "$@"; }
board_json() { curl -fsS "$KZOO_SERVER/api/$1" >"$2" || fail "GET /api/$1"; }

PORT=$("$PY" "$(dirname "${BASH_SOURCE[0]}")/../lib/free_ports.py")
export KZOO_SERVER=http://127.0.0.1:$PORT
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG KZOO_DEVICE_CLASS

# The catalog with both eager baselines made unmistakably slower (the same
# computation repeated), so that on a loaded CPU a real improvement wins the
# A/B verdict every time (tests/cli/service.sh says why; on a 2-core machine
# under load 16, the measure shapes' calls are scheduling noise: the catalog's
# eager RMSNorm and the fewer-passes one measured 0.92x one way).
# Three of the catalog's kernels (the hand computations below are written for them; the fp8 GEMM
# is the one left without a baseline).
FP8=h200/gemm/blockscale/fp8/fp8_blockscale_gemm_eager
mkdir -p "$T/kernel_data"
cp "$SRC/catalog/kernel_data/.kernel_data" "$T/kernel_data/"
for k in "$SOFT" "$RMS" "$FP8"; do
  mkdir -p "$T/kernel_data/$(dirname "$k")" && cp -r "$SRC/catalog/kernel_data/$k" "$T/kernel_data/$k"
done
cp "$SRC/catalog/samples/softmax_six_passes.py" "$T/kernel_data/$SOFT/src/softmax.py"
cat >"$T/kernel_data/$RMS/src/rmsnorm_residual.py" <<'EOF'
# The eager baseline done twelve times over (the last one kept): slow, correct.
import torch

EPS = 1e-6


def rmsnorm_residual(x, residual, weight):
    r0 = residual.clone()
    for _ in range(12):
        residual.copy_(r0)
        residual.copy_((residual.float() + x.float()).to(residual.dtype))
        h = residual.float()
        inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS)
        y = (h * inv_rms * weight.float()).to(torch.bfloat16)
    return y
EOF

# ---------------------------------------------------------------- 1. kzoo init
run_to "kzoo init writes the rules and tags them" 0 "$KZOO" init "$D" --catalog "$T/kernel_data" --board-device-class cpu
rules0=$(G rev-parse 'checks^{commit}' 2>/dev/null)
check "the tag checks exists and is main's head" "$([ -n "$rules0" ] && [ "$rules0" = "$(G rev-parse main)" ]; echo $?)"
G show "checks:scienceslack.json" >"$T/rules.json" 2>/dev/null
"$PY" - "$T/rules.json" <<'EOF' && ok "scienceslack.json names the 3 kernels, version 1, device class cpu, adopt auto" || fail "scienceslack.json content"
import json, sys
b = json.load(open(sys.argv[1]))["benchmark"]
assert len(b["kernels"]) == 3 and b["version"] == 1 and b["guardrails"]["device_class"] == "cpu" and b["adopt"] == "auto", b
EOF
"$KZOO" validate "$T/rules.json" >/dev/null 2>&1; check "kzoo validate accepts the rules file" $?
echo '{"schema_version": "1", "benchmark": {"id": "x"}}' >"$T/bad_rules.json"
"$KZOO" validate "$T/bad_rules.json" >"$T/out" 2>&1; rc=$?
check "kzoo validate refuses a rules file lacking required fields (exit 1)" "$([ $rc = 1 ] && grep -q "required" "$T/out"; echo $?)"

# Accounts (docs/SECURITY.md): a maintainer queues the baselines; alice and bob
# (through his agent's token) each start a route of their own.
for u in maint:maintainer alice:member bob:member; do
  "$KZOO" user add "${u%%:*}" --role "${u##*:}" --data "$D" >/dev/null 2>&1 || fail "user add $u"
done
MAINT_TOKEN=$("$KZOO" token new maint --data "$D" 2>/dev/null)
ALICE_TOKEN=$("$KZOO" token new alice --data "$D" 2>/dev/null)
BOB_TOKEN=$("$KZOO" token new bob --agent claude --data "$D" 2>/dev/null)  # bob works through his agent
[ -n "$MAINT_TOKEN" ] && [ -n "$ALICE_TOKEN" ] && [ -n "$BOB_TOKEN" ] || fail "token new printed no token"

"$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" >"$T/serve.log" 2>&1 & SERVE_PID=$!
for _ in $(seq 100); do curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
"$KZOO" worker --data "$D" --device cpu --catalog "$SRC/catalog" --judge-dir "$SRC/judge" --lease 30 --timeout 400 \
  >"$T/worker.log" 2>&1 & WORKER_PID=$!

board_json board "$T/b0.json"
"$PY" - "$T/b0.json" <<'EOF' && ok "a fresh board: every kernel counts 1, score ranking empty" || fail "fresh board"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 1 and d["in_force"] and d["status"] == "active" and d["ranking"] == [], d["ranking"]
assert all(k["speedup"] == 1.0 and k["note"] == "no baseline yet" for k in d["kernels"]), d["kernels"]
EOF

# ---------------------------------------------------------------- 2. the eager baselines
# fp8 GEMM is left without a baseline on purpose: it must count 1.
run_to "a member cannot queue the baselines (403)" 2 \
  env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" baselines --kernel "$SOFT"
check "... and is told only maintainers may" "$(grep -q "only maintainers" "$T/err"; echo $?)"
run_to "kzoo baselines --wait (softmax, rmsnorm) are measured" 0 \
  env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" baselines --kernel "$SOFT" --kernel "$RMS" --wait --json
cp "$T/out" "$T/baselines.json"
"$PY" - "$T/baselines.json" <<'EOF' && ok "both baselines accepted, naming the commit whose source they measured" || fail "baselines"
import json, sys
d = json.load(open(sys.argv[1]))["submissions"]
assert len(d) == 2 and all(s["state"] == "accepted" and len(s["accepted_commit"]) == 40 for s in d), d
EOF
check "a baseline commits nothing" "$([ "$(G rev-parse main)" = "$rules0" ]; echo $?)"

# ---------------------------------------------------------------- 3. two routes
mkdir -p "$T/s" "$T/r"
cp -r "$SRC/catalog/kernel_data/$SOFT" "$T/s/pkg"; cp "$SRC/catalog/samples/softmax_fused.py" "$T/s/pkg/src/softmax.py"
cp -r "$SRC/catalog/kernel_data/$RMS" "$T/r/pkg"; cp "$SRC/catalog/samples/rmsnorm_residual_fewer_passes.py" "$T/r/pkg/src/rmsnorm_residual.py"
run_to "submit --route NAME with a bad name is refused" 2 \
  env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" submit "$T/s/pkg" --kernel-id "$SOFT" --submitter alice --route "Bad/Name" --summary x
run_to "a fused softmax on route fast-softmax is accepted" 0 \
  env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" submit "$T/s/pkg" --kernel-id "$SOFT" --submitter alice --route fast-softmax --summary "softmax: one fused pass" --json
cp "$T/out" "$T/sub_soft.json"
run_to "bob cannot submit to alice's route (403: he opens a pull request)" 2 \
  env KZOO_TOKEN="$BOB_TOKEN" "$KZOO" submit "$T/s/pkg" --kernel-id "$SOFT" --route fast-softmax --summary "softmax: mine" --json
check "... and is told whose route it is" "$(grep -q "belongs to alice" "$T/err" "$T/out"; echo $?)"
# ... and opens a pull request to it instead: held until alice decides.
run_to "bob opens a pull request to alice's route instead (held: PullRequest)" 0 \
  env KZOO_TOKEN="$BOB_TOKEN" "$KZOO" submit "$T/s/pkg" --kernel-id "$SOFT" --route fast-softmax --pull-request \
  --summary "softmax: the same, from bob" --no-wait --json
pr=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["hold_reason"] == "PullRequest", d; print(d["id"])' "$T/out")
check "... its job is held for alice's merge" "$([ -n "$pr" ]; echo $?)"
run_to "bob cannot merge his own pull request (403)" 1 env KZOO_TOKEN="$BOB_TOKEN" "$KZOO" merge "$pr"
run_to "alice asks for changes" 0 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" comment "$pr" "the same source as the route's" --request-changes
run_to "alice closes it" 0 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" close "$pr" --why "nothing new: the route's source already"
run_to "kzoo pull shows it closed, with the review" 0 "$KZOO" pull "$pr" --json
"$PY" - "$T/out" <<'EOF' && ok "the pull request: closed by alice, her review kept" || fail "pull request record"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["state"] == "closed" and d["decided_by"] == "alice" and d["submission_state"] == "cancelled", d
assert [c["kind"] for c in d["comments"]] == ["request_changes"], d["comments"]
EOF
curl -fsS "$KZOO_SERVER/submissions/$pr" >"$T/pr.html" 2>/dev/null
run_to "kzoo pulls lists it among all pull requests to fast-softmax, none open" 0 "$KZOO" pulls --route fast-softmax --state all --json
check "... one pull request, closed, aimed at fast-softmax (owner alice)" \
  "$("$PY" -c 'import json,sys; p=json.load(open(sys.argv[1]))["pulls"]; sys.exit(0 if len(p) == 1 and p[0]["state"] == "closed" and p[0]["route_owner"] == "alice" else 1)' "$T/out"; echo $?)"
check "its page shows the pull request, closed by alice, and her review" \
  "$(grep -q 'id="pull"' "$T/pr.html" && grep -q 'closed</strong> by alice' "$T/pr.html" && grep -q "the same source as the route" "$T/pr.html"; echo $?)"
run_to "an RMSNorm in fewer passes on route fast-rmsnorm is accepted" 0 \
  env KZOO_TOKEN="$BOB_TOKEN" "$KZOO" submit "$T/r/pkg" --kernel-id "$RMS" --submitter bob --route fast-rmsnorm --summary "rmsnorm: fewer passes" --json
cp "$T/out" "$T/sub_rms.json"
check "branch routes/fast-softmax holds the softmax accept" \
  "$(G show "routes/fast-softmax:$SOFT/src/softmax.py" | cmp -s - "$SRC/catalog/samples/softmax_fused.py"; echo $?)"
# A route starts at main's head when its first submission is measured: by
# then the softmax was adopted onto main, so fast-rmsnorm carries it too.
check "branch routes/fast-rmsnorm holds the rmsnorm accept, on top of main with the adopted softmax" \
  "$(G show "routes/fast-rmsnorm:$RMS/src/rmsnorm_residual.py" | cmp -s - "$SRC/catalog/samples/rmsnorm_residual_fewer_passes.py" &&
     G show "routes/fast-rmsnorm:$SOFT/src/softmax.py" | cmp -s - "$SRC/catalog/samples/softmax_fused.py" &&
     G log -1 --format=%B "routes/fast-rmsnorm^" | grep -q "Kzoo-Adopted-From: $(G rev-parse routes/fast-softmax)" &&
     [ "$(G rev-list --count routes/fast-softmax..routes/fast-rmsnorm)" = 2 ]; echo $?)"
check "adopt auto: main holds both" \
  "$(G show "main:$SOFT/src/softmax.py" | cmp -s - "$SRC/catalog/samples/softmax_fused.py" &&
     G show "main:$RMS/src/rmsnorm_residual.py" | cmp -s - "$SRC/catalog/samples/rmsnorm_residual_fewer_passes.py"; echo $?)"

# Reported scores: one by a maintainer (ranked), one by the route's owner (listed beside, unranked).
git clone -q "$D/kernel_data.git" "$T/clone" 2>/dev/null
report() {  # report BRANCH AUTHOR SCORE
  (cd "$T/clone" && git fetch -q origin && git checkout -q -B "$1" "origin/$1" && mkdir -p "$1" &&
   printf '{"score": %s, "cost": 12.5, "subtasks": []}\n' "$3" >"$1/metrics.json" && git add "$1/metrics.json" &&
   git -c user.name="$2" -c user.email="$2@example.org" commit -q -m "report $1" && git push -q origin "$1")
}
report routes/fast-softmax kzoo-maintainer 7.25 && report routes/fast-rmsnorm bob 9.5
check "reported metrics.json pushed to both routes" $?

# ---------------------------------------------------------------- 4. every number by hand
board_json board "$T/b1.json"
board_json routes "$T/routes.json"
for j in $(G for-each-ref --format='%(refname)' refs/jobs/); do
  n=${j#refs/jobs/}; G show "$j:check.json" >"$T/check_$n.json" 2>/dev/null
done
cat >"$T/hand.py" <<'EOF'
# The board recomputed by hand from the checks' records (refs/jobs/N:check.json).
import glob, json, math, subprocess, sys
T, D, board_file = sys.argv[1], sys.argv[2], sys.argv[3]
n_kernels = int(sys.argv[4])
b = json.load(open(board_file))
checks = {}
for f in glob.glob(T + "/check_*.json"):
    c = json.load(open(f)); checks[c["job"]] = c
def git(*a): return subprocess.run(["git", "--git-dir", D + "/kernel_data.git"] + list(a), capture_output=True, text=True).stdout
def close(a, e, what):
    assert a is not None and abs(a - e) <= 1e-9 * max(1.0, abs(e)), "%s: board %r, by hand %r" % (what, a, e)
base = {}
for c in sorted(checks.values(), key=lambda c: c["job"]):
    if c["kind"] == "baseline" and c["passed"] and c["version"] == b["version"] and c["device_class"] == "cpu":
        base[c["kernel_id"]] = c
def speedup(cand, k):
    bc = {x["id"]: x for x in base[k]["measured"]["cases"]}
    r = []
    for x in cand["measured"]["cases"]:
        y = bc[x["id"]]
        r.append(x["value"] / y["value"] if x["direction"] == "higher" else y["value"] / x["value"])
    assert len(r) == len(bc) and len(r) > 0
    return math.exp(sum(map(math.log, r)) / len(r))
def job_on(branch, k):
    for line in git("log", "--format=%B%x00", branch, "--", k + "/src").split("\x00"):
        for l in line.splitlines():
            if l.startswith("Kzoo-Job: "): return int(l.split()[1])
        if line.strip(): return None
kernels = b["kernel_ids"]
assert len(kernels) == n_kernels, kernels
expect = {}
for r in b["routes"]:
    sp = {}
    for k in kernels:
        j = job_on(r["ref"], k)
        if j is not None and k in base and checks[j]["passed"] and checks[j]["version"] == b["version"]:
            sp[k] = speedup(checks[j], k)
    for e in r["kernels"]:
        if e["kernel_id"] in sp: close(e["speedup"], sp[e["kernel_id"]], r["name"] + " " + e["kernel_id"])
        else: assert e["speedup"] is None, (r["name"], e)
    score = math.exp(sum(math.log(sp.get(k, 1.0)) for k in kernels) / len(kernels)) if sp else None
    if score is None: assert r["verified"]["score"] is None, r
    else: close(r["verified"]["score"], score, r["name"] + " score")
    expect[r["name"]] = (score, sp)
print(json.dumps({k: v[0] for k, v in expect.items()}))
ranked = [(x["route"], x["kind"]) for x in b["ranking"]]
want = sorted([(n, "verified", s) for n, (s, _) in expect.items() if s is not None] +
              [(x["name"], "reported", x["reported"]["score"]) for x in b["routes"]
               if x["reported"] and x["reported"].get("by_maintainer")], key=lambda t: (-t[2], t[0]))
assert ranked == [(n, k) for n, k, _ in want], (ranked, want)
for x, (n, k, s) in zip(b["ranking"], want): close(x["score"], s, "ranking " + n)
for k in b["kernels"]:
    best = max([(v[1][k["kernel_id"]], n) for n, v in expect.items() if k["kernel_id"] in v[1]], default=None)
    if best is None: assert k["speedup"] == 1.0 and k["route"] is None, k
    else: close(k["speedup"], best[0], "kernels table " + k["kernel_id"])
EOF
"$PY" "$T/hand.py" "$T" "$D" "$T/b1.json" 3 >"$T/hand1" 2>"$T/hand.err"; check "step 4: board score, per-kernel speed-ups and ranking match the hand computation (1e-9)" $?
cat "$T/hand.err" | tail -5
"$PY" - "$T/b1.json" "$T/routes.json" <<'EOF' && ok "verified vs reported: the maintainer's report ranked, the owner's listed beside; owners recorded" || fail "verified vs reported"
import json, math, sys
b = json.load(open(sys.argv[1])); routes = json.load(open(sys.argv[2]))["routes"]
rs = {r["name"]: r for r in b["routes"]}
s, r, m = rs["routes/fast-softmax"], rs["routes/fast-rmsnorm"], rs["main"]
assert s["owner"] == "alice" and r["owner"] == "bob", (s["owner"], r["owner"])
assert s["reported"]["score"] == 7.25 and s["reported"]["by_maintainer"] is True
assert r["reported"]["score"] == 9.5 and r["reported"]["by_maintainer"] is False
assert [x["route"] for x in b["reported_others"]] == ["routes/fast-rmsnorm"]
assert any(x["kind"] == "reported" and x["route"] == "routes/fast-softmax" for x in b["ranking"])
assert not any(x["kind"] == "reported" and x["route"] == "routes/fast-rmsnorm" for x in b["ranking"])
# fast-softmax holds one verified kernel; fast-rmsnorm and main (auto adoption) both: their score is the
# product's cube root, the softmax's speed-up the same on every route (one check, adopted)
ks = lambda x: {e["kernel_id"]: e["speedup"] for e in x["kernels"] if e["speedup"] is not None}
assert len(ks(s)) == 1 and len(ks(r)) == 2 and len(ks(m)) == 2, (ks(s), ks(r), ks(m))
assert ks(r) == ks(m) and all(ks(m)[k] == v for k, v in ks(s).items())
sp = ks(m)["h200/norm/softmax/bf16/softmax_eager"] * ks(m)["h200/norm/rmsnorm/bf16/rmsnorm_residual_eager"]
assert abs(m["verified"]["score"] - sp ** (1 / 3)) <= 1e-9, (m["verified"]["score"], sp)
assert abs(s["verified"]["score"] - ks(s)["h200/norm/softmax/bf16/softmax_eager"] ** (1 / 3)) <= 1e-9
fp8 = [k for k in b["kernels"] if "fp8" in k["kernel_id"]][0]
assert fp8["speedup"] == 1.0 and fp8["note"] == "no baseline yet", fp8
assert {x["name"]: x["owner"] for x in routes}["routes/fast-softmax"] == "alice"
# agents are agent tokens: bob's, which submitted; none has a submission waiting now
assert b["counts"]["routes"] == 2 and b["counts"]["agents"] == 1 and b["counts"]["agents_at_work"] == 0, b["counts"]
EOF
# every check records the rules commit and the verifier version it used
"$PY" - "$T" "$rules0" <<'EOF' && ok "every check records rules commit $rules0 and version 1" || fail "checks' records"
import glob, json, sys
cs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/check_*.json")]
assert len(cs) == 4 and all(c["rules_commit"] == sys.argv[2] and c["version"] == 1 for c in cs), [(c["rules_commit"], c["version"]) for c in cs]
EOF
G show "refs/jobs/$(jq -r '.jobs[0].id' "$T/sub_soft.json" 2>/dev/null || "$PY" -c 'import json,sys;print(json.load(open(sys.argv[1]))["jobs"][0]["id"])' "$T/sub_soft.json"):metrics.json" >"$T/metrics.json" 2>/dev/null
"$PY" - "$T/metrics.json" "$T/b1.json" <<'EOF' && ok "the check wrote {score, cost, subtasks} to metrics.json, its score the route's" || fail "metrics.json"
import json, sys
m = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert set(m) == {"score", "cost", "subtasks"} and m["cost"] > 0 and len(m["subtasks"]) == 1, m
st = m["subtasks"][0]
assert st["correct"] is True and st["id"].endswith("softmax_eager"), st
r = [x for x in b["routes"] if x["name"] == "routes/fast-softmax"][0]
assert abs(m["score"] - r["verified"]["score"]) <= 1e-9, (m["score"], r["verified"]["score"])
EOF
run_to "kzoo board prints the ranking and the page's URL" 0 "$KZOO" board
check "kzoo board's text names both routes and the URL" \
  "$(grep -q "routes/fast-softmax" "$T/out" && grep -q "routes/fast-rmsnorm" "$T/out" && grep -q "page: $KZOO_SERVER/" "$T/out"; echo $?)"

# ---------------------------------------------------------------- the pages, in a real browser
# AGENTS.md with raw HTML: the page shows its text, never runs its script.
(cd "$T/clone" && git fetch -q origin && git checkout -q -B main origin/main &&
 printf '# Rules\n\nBe *kind*. <script>document.title="pwned"</script>\n' >AGENTS.md && git add AGENTS.md &&
 git -c user.name=kzoo-maintainer -c user.email=m@example.org commit -q -m "AGENTS.md" && git push -q origin main)
curl -fsS "$KZOO_SERVER/" >"$T/page.html"
check "GET / renders AGENTS.md (cmark) without its raw HTML" \
  "$(grep -q "<em>kind</em>" "$T/page.html" && ! grep -q "<script" "$T/page.html"; echo $?)"
BROWSER_DIR="$SRC/tests/browser"
if [ ! -d "$BROWSER_DIR/node_modules/playwright-core" ]; then
  (cd "$BROWSER_DIR" && npm install --no-audit --no-fund >"$T/npm.log" 2>&1) || { cat "$T/npm.log"; fail "npm install playwright-core"; }
fi
sub_soft_id=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/sub_soft.json")
node "$BROWSER_DIR/board_pages.mjs" "$KZOO_SERVER" "$sub_soft_id" >"$T/browser.log" 2>&1
check "the pages in chromium: ranking, geomean, plots, no console errors, nothing leaves 127.0.0.1, readable without JavaScript" $?
sed 's/^/    /' "$T/browser.log"

# ---------------------------------------------------------------- 5. rules changed on main, tag not moved
edit_rules() {  # edit_rules PYTHON-STATEMENT-ON-b MESSAGE
  (cd "$T/clone" && git fetch -q origin && git checkout -q -B main origin/main &&
   "$PY" -c 'import json,sys; d=json.load(open("scienceslack.json")); b=d["benchmark"]; exec(sys.argv[1]); open("scienceslack.json","w").write(json.dumps(d, indent=2)+"\n")' "$1" &&
   git -c user.name=kzoo-maintainer -c user.email=m@example.org commit -q -am "$2" && git push -q origin main)
}
edit_rules 'b["kernels"] = [k for k in b["kernels"] if "fp8" not in k]' "rules: drop fp8 from the board"
check "a maintainer pushed a rules change to main" $?
board_json board "$T/b2.json"
"$PY" - "$T/b1.json" "$T/b2.json" <<'EOF' && ok "step 5: main moved, checks did not: the board is unchanged" || fail "step 5"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("rules_commit", "kernel_ids", "ranking", "kernels", "version"):
    assert a[k] == b[k], k
EOF

# ---------------------------------------------------------------- 6. move the tag
G tag -f checks main >/dev/null 2>&1; check "a maintainer moved checks to main" $?
board_json board "$T/b3.json"
"$PY" "$T/hand.py" "$T" "$D" "$T/b3.json" 2 >"$T/hand3" 2>"$T/hand.err"; check "step 6: the tag moved: 2 kernels, every number again by hand (1e-9)" $?
cat "$T/hand.err" | tail -5
"$PY" - "$T/b3.json" "$(G rev-parse main)" <<'EOF' && ok "step 6: the new rules commit is in force, scores are square roots now" || fail "step 6"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["rules_commit"] == sys.argv[2] and len(b["kernel_ids"]) == 2
r = [x for x in b["routes"] if x["name"] == "routes/fast-softmax"][0]
s = [e["speedup"] for e in r["kernels"] if e["speedup"] is not None][0]
assert abs(r["verified"]["score"] - s ** 0.5) <= 1e-9
EOF

# ---------------------------------------------------------------- 7. raise the version
edit_rules 'b["version"] = 2' "rules: verifier version 2" && G tag -f checks main >/dev/null 2>&1
check "a maintainer raised the version and moved the tag" $?
board_json board "$T/b4.json"
board_json boards/1 "$T/b5.json"
"$PY" - "$T/b3.json" "$T/b4.json" "$T/b5.json" <<'EOF' && ok "step 7: board 2 is new (no verified result yet), board 1 is kept exactly as it was" || fail "step 7"
import json, sys
old, new, kept = (json.load(open(f)) for f in sys.argv[1:4])
# no verified result yet under version 2 (a route's own report is its claim, shown on the board in force)
assert new["version"] == 2 and new["in_force"] and new["versions"] == [1, 2], (new["version"], new["versions"])
assert [x for x in new["ranking"] if x["kind"] == "verified"] == [] and all(r["verified"]["score"] is None for r in new["routes"])
assert all(k["speedup"] == 1.0 for k in new["kernels"])
assert kept["version"] == 1 and not kept["in_force"]
for k in ("rules_commit", "kernel_ids", "ranking", "kernels"):
    assert kept[k] == old[k], k
EOF
run_to "kzoo board --version 1 --json" 0 "$KZOO" board --version 1 --json
"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if a["ranking"]==b["ranking"] else 1)' "$T/out" "$T/b5.json"
check "kzoo board --version 1 shows the kept board" $?
run_to "kzoo board --version 9 is an error" 2 "$KZOO" board --version 9
curl -sS -o /dev/null -w '%{http_code}' "$KZOO_SERVER/api/boards/9" | grep -q 404; check "GET /api/boards/9 is 404" $?

# ---------------------------------------------------------------- 8. issues
run_to "bob's agent opens an issue" 0 env KZOO_TOKEN="$BOB_TOKEN" "$KZOO" issue new "rmsnorm's eager is slower than F.rms_norm" --body "seen on shape 2"
issue=$(cat "$T/out")
check "kzoo issue new prints the id" "$([ "$issue" -ge 1 ] 2>/dev/null; echo $?)"
run_to "an issue needs a token" 1 env -u KZOO_TOKEN "$KZOO" issue new "anonymous"
run_to "a title with an escape sequence is refused" 1 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" issue new "$(printf 'x\033[2J')"
grep -q "U+001B" "$T/err"; check "... naming the control character" $?
run_to "alice comments" 0 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" issue comment "$issue" "which torch?"
run_to "alice cannot close bob's issue" 1 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" issue close "$issue"
grep -q "opened by bob" "$T/err"; check "... and is told whose it is" $?
run_to "bob's agent closes his issue" 0 env KZOO_TOKEN="$BOB_TOKEN" "$KZOO" issue close "$issue" --why "fixed by the catalog"
run_to "kzoo issue show --json" 0 "$KZOO" issue show "$issue" --json
"$PY" - "$T/out" <<'EOF' && ok "the issue reads back: closed by bob, alice's comment in its thread" || fail "kzoo issue show: $(cat "$T/out")"
import json, sys
i = json.load(open(sys.argv[1]))
assert i["state"] == "closed" and i["closed_by"] == "bob" and i["close_reason"] == "fixed by the catalog", i
assert [c["who"] for c in i["thread"]] == ["alice"] and i["author"] == "bob", i
EOF
run_to "kzoo issue list --state all" 0 "$KZOO" issue list --state all
grep -q "rmsnorm's eager" "$T/out"; check "... lists it" $?
curl -sS "$KZOO_SERVER/issues/$issue" | grep -q "which torch?"; check "GET /issues/$issue shows the thread" $?

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
