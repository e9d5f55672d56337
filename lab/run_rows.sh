#!/usr/bin/env bash
# Issue 21: the row kernels on the lab bench (scripts/gpu/catalog_helper.py lab).
# Each task's current solution src/ (the baseline to beat) and the open round's variants
# (lab/<task>/NOTES.md; none while a round is being written: then the solutions alone),
# checked at every correctness and graded shape (comparator
# and the board's elementwise bound) and timed at every graded shape beside the eager package.
# Each task runs in its own process, so a fault in one cannot spoil the rest.
# Run from the repository root. Everything goes to ${OUT:-/tmp/out}/rows/.
# Wall budget ~506 s with every group at most (top-k 200 s + its adversarial rows 60 s, layernorm
# 70 s, rmsnorm-residual 56 s, silu-and-mul 120 s; a CUDA C++ candidate needs ~45 s more in its
# group for its nvcc build, which catalog_helper's lab runs when it loads every source (round 8);
# the top-k slot needs far less with no candidate;
# LAB_GROUPS picks groups, TOPK the top-k candidates): each group has a hard timeout (its --deadline-s, counted from the task's
# own start after torch's import, stops new work ~10 s before it). Earlier: topk-logits 80 s,
# layernorm 46 s, rmsnorm-residual 44 s (round 3 took 100 s for 3 + 4 + 4 sources; round 4's
# layernorm 19 s for 3 sources, rmsnorm 10 s for 1).
# Round 8 (session 22): top-k's cuda2 and cuda3 beside cuda1 and the solution; cuda2 became the
# solution, and the round's sources left the tree (b438c55:lab/topk-logits/cuda{1,2,3}).
# LAB_GROUPS="topk-logits ..." runs only those groups (bash owns GROUPS).
# Round 5 (lab/<task>/NOTES.md, "Round 5"): layernorm's pipe and lean, rmsnorm-residual's
# persist, pipe and lean, each beside its solution. Round 6: topk-logits' rowfuse beside its
# solution (two sources in the 80 s slot, as round 3 ran three).
set -u
PY="${KZOO_PYTHON:-python3}"
O="${OUT:-/tmp/out}/rows"
mkdir -p "$O"
S=catalog/solutions/gpu/h200
T=catalog/tasks
L=lab
t0=$(date +%s)
: >"$O/summary.txt"
LAB_GROUPS=" ${LAB_GROUPS:-topk-logits layernorm rmsnorm-residual silu-and-mul} "
run() { case "$LAB_GROUPS" in *" $1 "*) return 0 ;; esac; echo "$1 not run (LAB_GROUPS)" >>"$O/summary.txt"; return 1; }

# 1. topk-logits: the solution (round 4's fused kernel at V > 32768, the atomic-slot one at
#    one segment a row), then round 6's rowfuse (lab/topk-logits/NOTES.md, "Round 6": pass 2
#    fused into pass 1's program at one segment a row). The solution first, so that a
#    deadline stop loses the candidate, not the reference.
#    Rounds 7 and 8 (sessions 21-22): cuda1, cuda2 (now the solution) and cuda3; no open candidate.
#    TOPK="NAME ..." (folders under lab/topk-logits/) adds candidates, TOPK_SLOT the slot (s);
#    lab/topk-logits/pick.py names the winner.
if run topk-logits; then
CANDS=""; for c in ${TOPK:-}; do CANDS="$CANDS $L/topk-logits/$c"; done
SLOT=${TOPK_SLOT:-200}
timeout -k 3 "$SLOT" "$PY" scripts/gpu/catalog_helper.py lab $T/topk-logits \
  $S/sampling/topk/fp32/topk_logits_eager/src $CANDS \
  --calls 20 --seeds 2 --deadline-s $((SLOT - 12)) >"$O/topk-logits.jsonl" 2>"$O/topk-logits.err"
echo "topk-logits rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
# 1b. the exact path on the GPU: adversarial rows (ties, infinities, -0.0, ...) for every source.
timeout -k 3 60 "$PY" $L/topk-logits/adversarial_gpu.py $S/sampling/topk/fp32/topk_logits_eager/src $CANDS \
  >"$O/topk-logits-adversarial.jsonl" 2>"$O/topk-logits-adversarial.err"
echo "topk-logits adversarial rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
"$PY" $L/topk-logits/pick.py "$O" >>"$O/summary.txt" 2>&1
fi

# 2. layernorm: the solution (round 5's: one pass at H = 8192, pipelined persistent at >= 16384).
#    Round 6's loop3 lost (session 23; cdfc0b2:lab/layernorm/loop3). Round 7's w16 (loop3 on 16 warps
#    and 2048-column tiles at 8192) lost 19-33% (session 23; d52bdce:lab/layernorm/w16).
#    Round 8's cuda1 (CUDA C++, persistent CTAs) lost 9% at 8192 (session 24; fe3b8f2:lab/layernorm/cuda1).
#    Round 9 (session 31; 4c65222:lab/layernorm/{indc,w16r}): indc won at 16384 and is in the solution;
#    w16r lost. LN_CANDS=",DIR,..." adds candidates beside the solution. Round 11 (session 33, not
#    run): LN_CANDS=",lab/layernorm/ind2d" (torch.compile's 2-D int32 form at 8192).
if run layernorm; then
timeout -k 3 70 "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
  "$T/layernorm:60:$S/norm/layernorm/bf16/layernorm_eager/src${LN_CANDS:-}" \
  >"$O/layernorm.jsonl" 2>"$O/layernorm.err"
echo "layernorm rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
fi

# 3. rmsnorm-residual: the solution (round 6's loop2 in it at H = 4096 since session 23;
#    cdfc0b2:lab/rmsnorm-residual/loop2). Round 7's w16b won at 8192 and is in the
#    solution; w16 and w16b lost at 16384 (d52bdce:lab/rmsnorm-residual/w16{,b}). Its own slot, not what is left.
#    Round 8's cuda1 (CUDA C++, persistent CTAs) lost 5% at 16384 (session 24;
#    fe3b8f2:lab/rmsnorm-residual/cuda1).
#    Round 9 (session 31; 4c65222:lab/rmsnorm-residual/{ns1,c2k,c4k}): none won. RMS_CANDS=",DIR,..."
#    adds candidates beside the solution.
if run rmsnorm-residual; then
timeout -k 3 56 "$PY" $L/rows_lab.py --calls 20 --seeds 1 \
  "$T/rmsnorm-residual:46:$S/norm/rmsnorm/bf16/rmsnorm_residual_eager/src${RMS_CANDS:-}" \
  >"$O/rmsnorm-residual.jsonl" 2>"$O/rmsnorm-residual.err"
echo "rmsnorm-residual rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
fi

# 4. silu-and-mul: the solution (CUDA C++; round 2's flat1k in it for rows of more than 512
#    vectors since session 23; cdfc0b2:lab/silu-and-mul/flat1k); no open candidate. One extension
#    built by nvcc in the slot (~30 s).
if run silu-and-mul; then
timeout -k 3 120 "$PY" scripts/gpu/catalog_helper.py lab $T/silu-and-mul \
  $S/activation/swiglu/bf16/silu_and_mul_eager/src \
  --calls 20 --seeds 2 --deadline-s 108 >"$O/silu-and-mul.jsonl" 2>"$O/silu-and-mul.err"
echo "silu-and-mul rc=$? t=$(( $(date +%s) - t0 ))s" >>"$O/summary.txt"
fi
cat "$O/summary.txt"
