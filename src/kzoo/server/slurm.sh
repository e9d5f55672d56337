# kzoo's Slurm commands for this server: sbatch, squeue, sacct, scancel
# (docs/BATCH.md). Served by GET /slurm.sh to a signed-in caller, with the
# caller's token written in: keep it as you keep the token.
#
#   source <(curl -fsS -H "Authorization: Bearer $TOKEN" @KZOO_URL@/slurm.sh)
#   sbatch job.sbatch          # from a clone, after pushing; prints "Submitted batch job <id>"
#   squeue; sacct -j <id>; scancel <id>
#   git fetch origin refs/jobs/<id>   # what the job left in its submit directory
#
# A job runs `bash <script>` (the script as it was when sbatch sent it) in its
# submit directory: the clone's top as HEAD holds it, which must be pushed.
# Needs bash, curl and git. KZOO_SERVER overrides the URL (behind a TLS
# proxy); KZOO_ROUTE names the route a job's changes are judged on (default
# main, as a push to main).

KZOO_SLURM_URL="${KZOO_SERVER:-@KZOO_URL@}"
KZOO_SLURM_TOKEN='@KZOO_TOKEN@'

# _kzoo_slurm COMMAND CURL-ARGS...: the server's answer on stdout, or its
# message on stderr and status 1 (the server writes Slurm's own error lines).
_kzoo_slurm() {
  local cmd=$1 out rc
  shift
  out=$(curl -s --fail-with-body -H "Authorization: Bearer $KZOO_SLURM_TOKEN" "$@")
  rc=$?
  if [ $rc -ne 0 ]; then
    if [ -n "$out" ]; then printf '%s\n' "$out" >&2; else echo "$cmd: error: cannot reach $KZOO_SLURM_URL (curl exit $rc)" >&2; fi
    return 1
  fi
  [ -z "$out" ] || printf '%s\n' "$out"
}

# _kzoo_sbatch_opt NAME VALUE: one option, from the command line or a #SBATCH line.
_kzoo_sbatch_opt() {
  case "$1" in
    -t|--time) _ks_time=$2 ;;
    -c|--cpus-per-task) _ks_cpus=$2 ;;
    --mem) _ks_mem=$2 ;;
    --gres)
      case "$2" in
        gpu:*) _ks_gpus=${2##*:} ;;
        *) echo "sbatch: error: --gres=$2: only gpu:N is offered" >&2; return 1 ;;
      esac ;;
    -p|--partition) _ks_part=$2 ;;
    -J|--job-name) _ks_name=$2 ;;
    -o|--output|-e|--error|-D|--chdir)
      echo "sbatch: error: $1 is not offered: the output is slurm-<id>.out in the submit directory (the clone's top)" >&2
      return 1 ;;
    *) ;;  # Slurm's other options (--nodes, --ntasks, --mail-*...) ask nothing kzoo grants: ignored
  esac
}

# _kzoo_sbatch_args ARGS...: --opt=value, --opt value, -x value; sets _ks_used to the words taken.
_kzoo_sbatch_args() {
  _ks_used=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --*=*) _kzoo_sbatch_opt "${1%%=*}" "${1#*=}" || return 1; shift; _ks_used=$((_ks_used + 1)) ;;
      --hold|--requeue|--no-requeue|--parsable|--wait|--exclusive) shift; _ks_used=$((_ks_used + 1)) ;;
      -t|-c|-p|-J|-o|-e|-D|-N|-n|-A|-q|--time|--cpus-per-task|--mem|--gres|--partition|--job-name|--output|--error|--chdir|--nodes|--ntasks|--account|--qos|--comment)
        [ $# -ge 2 ] || { echo "sbatch: error: option $1 needs a value" >&2; return 1; }
        _kzoo_sbatch_opt "$1" "$2" || return 1; shift 2; _ks_used=$((_ks_used + 2)) ;;
      -t*|-c*|-p*|-J*) _kzoo_sbatch_opt "${1:0:2}" "${1:2}" || return 1; shift; _ks_used=$((_ks_used + 1)) ;;
      -*) shift; _ks_used=$((_ks_used + 1)) ;;
      *) return 0 ;;
    esac
  done
}

sbatch() {
  local _ks_time="" _ks_cpus="" _ks_mem="" _ks_gpus="" _ks_part="" _ks_name="" _ks_used=0
  local line top rel head archive answer
  # #SBATCH lines first, then the command line over them (Slurm's order).
  local script=""
  local -a cli=("$@")
  _kzoo_sbatch_args "${cli[@]}" || return 1
  script=${cli[$_ks_used]:-}
  if [ -z "$script" ]; then echo "sbatch: error: give the batch script: sbatch [options] job.sbatch" >&2; return 1; fi
  if [ $((_ks_used + 1)) -lt ${#cli[@]} ]; then
    echo "sbatch: error: arguments after the script are not passed to it here: read them from #SBATCH lines or the environment" >&2
    return 1
  fi
  if [ ! -f "$script" ]; then echo "sbatch: error: Unable to open file $script" >&2; return 1; fi
  local _c_time="" _c_cpus="" _c_mem="" _c_gpus="" _c_part="" _c_name=""
  _c_time=$_ks_time; _c_cpus=$_ks_cpus; _c_mem=$_ks_mem; _c_gpus=$_ks_gpus; _c_part=$_ks_part; _c_name=$_ks_name
  _ks_time=""; _ks_cpus=""; _ks_mem=""; _ks_gpus=""; _ks_part=""; _ks_name=""
  # Slurm reads #SBATCH lines until the first line that is not a comment or blank.
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
      '#SBATCH'*)
        # shellcheck disable=SC2086
        set -f; _kzoo_sbatch_args ${line#\#SBATCH}; local rc=$?; set +f
        [ $rc -eq 0 ] || return 1 ;;
      '#'*|'') ;;
      *) break ;;
    esac
  done < "$script"
  [ -z "$_c_time" ] || _ks_time=$_c_time; [ -z "$_c_cpus" ] || _ks_cpus=$_c_cpus; [ -z "$_c_mem" ] || _ks_mem=$_c_mem
  [ -z "$_c_gpus" ] || _ks_gpus=$_c_gpus; [ -z "$_c_part" ] || _ks_part=$_c_part; [ -z "$_c_name" ] || _ks_name=$_c_name

  # The script travels as its content (Slurm copies it at submission too); the
  # submit directory is the clone's top as HEAD holds it: committed and pushed.
  top=$(git rev-parse --show-toplevel 2>/dev/null) || {
    echo "sbatch: error: run sbatch inside a clone of the project (git clone $KZOO_SLURM_URL/git/kernel_data)" >&2; return 1; }
  rel=$(realpath --relative-to="$top" "$script") || return 1
  case "$rel" in ../*) echo "sbatch: error: $script lies outside the clone $top" >&2; return 1 ;; esac
  if [ -n "$(git -C "$top" status --porcelain --untracked-files=no)" ]; then
    echo "sbatch: error: the clone has uncommitted changes: a job runs what HEAD holds; commit and push them first (git status)" >&2
    return 1
  fi
  head=$(git -C "$top" rev-parse HEAD) || return 1
  if [ -z "$(git -C "$top" branch -r --contains "$head" 2>/dev/null)" ]; then
    echo "sbatch: error: HEAD ${head:0:12} is not pushed: git push origin HEAD:routes/<name> first (the job's result is judged against it)" >&2
    return 1
  fi
  archive=$(mktemp "${TMPDIR:-/tmp}/kzoo-sbatch.XXXXXX") || return 1
  if ! git -C "$top" archive --format=tar.gz -o "$archive" "$head" || ! cp "$script" "$archive.script"; then
    rm -f "$archive" "$archive.script"; return 1
  fi
  answer=$(_kzoo_slurm sbatch -X POST "$KZOO_SLURM_URL/api/batch?format=text" \
    -F "submit=@$archive;type=application/gzip;filename=submit.tar.gz" \
    -F "script_text=<$archive.script" --form-string "script=$rel" --form-string "time=$_ks_time" --form-string "cpus_per_task=$_ks_cpus" \
    --form-string "mem=$_ks_mem" --form-string "gpus=$_ks_gpus" --form-string "partition=$_ks_part" \
    --form-string "job_name=$_ks_name" --form-string "base_commit=$head" --form-string "route=${KZOO_ROUTE:-}")
  local rc=$?
  rm -f "$archive" "$archive.script"
  [ $rc -eq 0 ] || return 1
  printf '%s\n' "$answer"
}

squeue() {
  local user=""
  while [ $# -gt 0 ]; do
    case "$1" in
      -u|--user) user=$2; shift 2 ;;
      --user=*) user=${1#*=}; shift ;;
      --me) shift ;;
      *) echo "squeue: error: only -u USER is offered here" >&2; return 1 ;;
    esac
  done
  _kzoo_slurm squeue -G "$KZOO_SLURM_URL/api/batch" --data-urlencode "format=squeue" ${user:+--data-urlencode "user=$user"}
}

sacct() {
  local job=""
  while [ $# -gt 0 ]; do
    case "$1" in
      -j|--jobs) job=$2; shift 2 ;;
      --jobs=*) job=${1#*=}; shift ;;
      -X|--allocations|-n|--noheader) shift ;;
      *) echo "sacct: error: only -j ID is offered here" >&2; return 1 ;;
    esac
  done
  if [ -z "$job" ]; then
    _kzoo_slurm sacct "$KZOO_SLURM_URL/api/batch?format=sacct"
    return
  fi
  case "$job" in *[!0-9]*|'') echo "sacct: error: job id $job is not a number" >&2; return 1 ;; esac
  _kzoo_slurm sacct "$KZOO_SLURM_URL/api/batch/$job?format=sacct"
}

scancel() {
  if [ $# -eq 0 ]; then echo "scancel: error: No job identification provided" >&2; return 1; fi
  local job rc=0
  for job in "$@"; do
    case "$job" in *[!0-9]*|'') echo "scancel: error: Invalid job id $job" >&2; rc=1; continue ;; esac
    _kzoo_slurm scancel -d "" "$KZOO_SLURM_URL/api/batch/$job/cancel?format=text" || rc=1
  done
  return $rc
}
