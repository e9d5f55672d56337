// Users' batch jobs (batch.hpp) on the SQL state: a jobs row of kind batch
// and its batch_jobs row, written in one transaction with the audit row.
#include <fmt/format.h>

#include "kzoo/store/pulls.hpp"
#include "kzoo/store/sql_state.hpp"

namespace kzoo::store {

bool valid_end_state(std::string_view s) {
  for (std::string_view k : {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY"})
    if (s == k) return true;
  return false;
}

}  // namespace kzoo::store

namespace kzoo::store::sql {

namespace {

constexpr const char* kBatchCols =
    "b.owner, b.token_id, b.name, b.script, b.script_text, b.partition_name, b.time_s, b.cpus, b.memory_mb, b.gpus, "
    "b.route, b.base_commit, b.package_path, b.sha256, b.package_bytes, b.end_state, b.exit_code, b.exit_signal, "
    "b.elapsed_ms, b.result_commit, b.judged, b.review";

std::string select_batch() {
  return fmt::format("SELECT {}, {} FROM jobs j JOIN batch_jobs b ON b.job_id = j.id", Core::qualified_job_cols(),
                     kBatchCols);
}

BatchJob batch_of(const Row& r) {
  BatchJob b;
  b.job = Core::job_of(r);
  std::size_t i = Core::kJobColCount;
  b.owner = r.text(i++);
  b.token_id = r.text(i++);
  b.name = r.text(i++);
  b.script = r.text(i++);
  b.script_text = r.text(i++);
  b.partition = r.text(i++);
  b.time_s = static_cast<int>(r.i64(i++));
  b.cpus = static_cast<int>(r.i64(i++));
  b.memory_mb = static_cast<int>(r.i64(i++));
  b.gpus = static_cast<int>(r.i64(i++));
  b.route = r.text(i++);
  b.base_commit = r.text(i++);
  b.package_path = r.text(i++);
  b.sha256 = r.text(i++);
  b.package_bytes = r.i64(i++);
  b.end_state = r.text(i++);
  if (auto v = r.opt(i++)) b.exit_code = static_cast<int>(*v);
  if (auto v = r.opt(i++)) b.exit_signal = static_cast<int>(*v);
  b.elapsed_ms = r.opt(i++);
  b.result_commit = r.text(i++);
  b.judged = r.i64(i++) != 0;
  if (!r.null(i)) b.review = nlohmann::json::parse(r.text(i));
  return b;
}

void check_new(const NewBatch& b) {
  auto bad = [](std::string_view field, const std::string& why) {
    refuse(StateError::invalid, fmt::format("batch job {}: {}", field, why));
  };
  if (!valid_name(b.owner)) bad("owner", fmt::format("\"{}\" is not a user name", b.owner));
  if (b.name.empty() || b.name.size() > 200) bad("name", "give 1-200 bytes (--job-name)");
  if (b.script.empty() || b.script.size() > 320) bad("script", "give the script's path, 1-320 bytes");
  if (b.script_text.empty() || b.script_text.size() > 65536) bad("script_text", "give the script, 1-65536 bytes");
  if (b.partition.empty() || b.partition.size() > 64) bad("partition", "give 1-64 bytes");
  if (b.time_s < 1) bad("time", fmt::format("{} s: give at least 1 s", b.time_s));
  if (b.cpus < 1) bad("cpus", fmt::format("{}: give at least 1", b.cpus));
  if (b.memory_mb < 1) bad("memory", fmt::format("{} MB: give at least 1 MB", b.memory_mb));
  if (b.gpus < 0) bad("gpus", fmt::format("{}: give 0 or more", b.gpus));
  if (b.route.size() > 64) bad("route", "give at most 64 bytes");
  if (!is_hex(b.base_commit, 40)) bad("base_commit", fmt::format("\"{}\" is not a 40-hex commit id", b.base_commit));
  if (b.package_path.empty()) bad("package_path", "the stored submit directory is missing");
  if (!is_hex(b.sha256, 64)) bad("sha256", "give 64 lowercase hex digits");
  if (b.package_bytes < 0) bad("package_bytes", "give 0 or more");
  if (b.max_attempts < 1 || b.max_attempts > 100) bad("max_attempts", "give 1 to 100");
}

// The job state a batch job ends in (batch.hpp).
State job_state_of(std::string_view end) {
  if (end == "COMPLETED") return State::accepted;
  if (end == "NODE_FAIL") return State::failed;
  if (end == "CANCELLED") return State::cancelled;
  return State::rejected;
}

}  // namespace

BatchJob SqlBatches::load(std::int64_t job_id, bool lock) {
  auto rows = c_.db().query(fmt::format("{} WHERE j.id=$1{}", select_batch(), lock ? c_.db().lock_rows() : ""), {job_id});
  if (rows.empty())
    refuse(StateError::not_found, fmt::format("there is no batch job {} (squeue lists yours; GET /api/batch)", job_id));
  return batch_of(rows.front());
}

StateResult<BatchJob> SqlBatches::create_batch(const NewBatch& b) {
  return c_.guarded([&] {
    check_new(b);
    return c_.write([&] {
      UnixMs now = c_.db().now();
      if (b.max_concurrent && !b.token_id.empty()) {
        load_token_locked(b.token_id);
        auto u = c_.usage(b.token_id, now);
        if (u.active_jobs + 1 > *b.max_concurrent)
          refuse(StateError::limited,
                 fmt::format("token {} has {} jobs queued or running, its cap is {}: wait for one to end (squeue) "
                             "or scancel one",
                             b.token_id, u.active_jobs, *b.max_concurrent));
      }
      const std::string hold = b.held ? std::string(kHeldAdmin) : "";
      // Its --gres GPUs are what it needs of a runner's node, as a graded job's task's are.
      auto rows = c_.db().query("INSERT INTO jobs(submission_id, state, max_attempts, created_at, held, hold_reason, kind, "
                                "requires_gpus) VALUES (NULL, 'queued', $1, $2, $3, $4, 'batch', $5) RETURNING id",
                                {std::int64_t{b.max_attempts}, now, std::int64_t{b.held ? 1 : 0}, hold,
                                 std::int64_t{b.gpus}});
      const std::int64_t id = rows.at(0).i64(0);
      c_.db().exec("INSERT INTO batch_jobs(job_id, owner, token_id, name, script, script_text, partition_name, time_s, "
                   "cpus, memory_mb, gpus, route, base_commit, package_path, sha256, package_bytes) VALUES "
                   "($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)",
                   {id, b.owner, b.token_id, b.name, b.script, b.script_text, b.partition, std::int64_t{b.time_s},
                    std::int64_t{b.cpus}, std::int64_t{b.memory_mb}, std::int64_t{b.gpus}, b.route, b.base_commit,
                    b.package_path, b.sha256, b.package_bytes});
      c_.audit(now, "batch.submit", fmt::format("job/{}", id),
               {{"script", b.script}, {"partition", b.partition}, {"time_s", b.time_s}, {"held", b.held}});
      return load(id, false);
    });
  });
}

void SqlBatches::load_token_locked(const std::string& id) { (void)c_.load_token(id, true); }

StateResult<BatchJob> SqlBatches::get_batch(std::int64_t job_id) {
  return c_.guarded([&] { return load(job_id, false); });
}

StateResult<std::vector<BatchJob>> SqlBatches::list_batch(const BatchFilter& f) {
  return c_.guarded([&] {
    if (f.limit < 1 || f.limit > 1000)
      refuse(StateError::invalid, fmt::format("limit {} is out of range: give 1 to 1000", f.limit));
    auto rows = c_.db().query(fmt::format("{} WHERE j.id < $1 AND (CAST($2 AS TEXT) IS NULL OR b.owner = $2) "
                                          "ORDER BY j.id DESC LIMIT $3",
                                          select_batch()),
                              {f.before_id, f.owner ? Value(*f.owner) : Value(nullptr), std::int64_t{f.limit}});
    std::vector<BatchJob> out;
    for (const auto& r : rows) out.push_back(batch_of(r));
    return out;
  });
}

StateResult<BatchJob> SqlBatches::finish_batch(std::int64_t job_id, const std::string& worker_id, const BatchEnd& e) {
  return c_.guarded([&] {
    if (!valid_end_state(e.end_state) || e.end_state == "CANCELLED")
      refuse(StateError::invalid, fmt::format("batch job {}: \"{}\" is not how a runner ends a job: give COMPLETED, "
                                              "FAILED, TIMEOUT, OUT_OF_MEMORY or NODE_FAIL",
                                              job_id, e.end_state));
    if ((e.end_state == "COMPLETED") != (e.exit_code == 0 && e.exit_signal == 0))
      refuse(StateError::invalid, fmt::format("batch job {}: COMPLETED means exit code 0 and no signal, and only that "
                                              "(got {} with {}:{})",
                                              job_id, e.end_state, e.exit_code, e.exit_signal));
    if (!e.result_commit.empty() && !is_hex(e.result_commit, 40))
      refuse(StateError::invalid, fmt::format("batch job {}: result commit \"{}\" is not 40 hex digits", job_id,
                                              e.result_commit));
    if (e.elapsed_ms < 0) refuse(StateError::invalid, fmt::format("batch job {}: elapsed time is negative", job_id));
    return c_.write([&] {
      UnixMs now = c_.db().now();
      Job before = c_.expect_holder(job_id, worker_id, "finish");
      if (!before.is_batch())
        refuse(StateError::invalid, fmt::format("job {} grades a submission: it ends with complete, not finish_batch",
                                                job_id));
      const State to = job_state_of(e.end_state);
      c_.db().exec("UPDATE jobs SET state=$1, result=$2, finished_at=$3, lease_expires_at=NULL WHERE id=$4",
                   {std::string(to_string(to)), e.result.is_null() ? Value(nullptr) : Value(json_text(e.result)), now,
                    job_id});
      c_.db().exec("UPDATE batch_jobs SET end_state=$1, exit_code=$2, exit_signal=$3, elapsed_ms=$4, result_commit=$5 "
                   "WHERE job_id=$6",
                   {e.end_state, std::int64_t{e.exit_code}, std::int64_t{e.exit_signal}, e.elapsed_ms, e.result_commit,
                    job_id});
      c_.audit(now, "batch.end", fmt::format("job/{}", job_id),
               {{"worker", worker_id}, {"state", e.end_state}, {"exit_code", e.exit_code}, {"commit", e.result_commit}});
      return load(job_id, false);
    });
  });
}

StateResult<BatchJob> SqlBatches::cancel_batch(std::int64_t job_id, const std::string& reason) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      BatchJob b = load(job_id, true);
      if (b.job.state != State::queued && b.job.state != State::running)
        refuse(StateError::wrong_state,
               fmt::format("cannot cancel batch job {}: it is {} ({}), and only a pending or running job can be "
                           "cancelled",
                           job_id, to_string(b.job.state), b.end_state.empty() ? "ended" : b.end_state));
      std::optional<std::int64_t> elapsed;
      if (b.job.state == State::running && b.job.started_at) elapsed = now - *b.job.started_at;
      c_.db().exec("UPDATE jobs SET state='cancelled', finished_at=$1, lease_expires_at=NULL, held=0 WHERE id=$2",
                   {now, job_id});
      c_.db().exec("UPDATE batch_jobs SET end_state='CANCELLED', elapsed_ms=$1 WHERE job_id=$2",
                   {elapsed ? Value(*elapsed) : Value(nullptr), job_id});
      c_.audit(now, "batch.cancel", fmt::format("job/{}", job_id),
               {{"was", to_string(b.job.state)}, {"reason", reason}});
      return load(job_id, false);
    });
  });
}

StateResult<std::vector<BatchJob>> SqlBatches::unjudged_batches(int limit) {
  return c_.guarded([&] {
    if (limit < 1 || limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
    std::vector<BatchJob> out;
    for (const auto& r : c_.db().query(fmt::format("{} WHERE b.judged = 0 AND b.result_commit <> '' ORDER BY j.id "
                                                   "LIMIT $1",
                                                   select_batch()),
                                       {std::int64_t{limit}}))
      out.push_back(batch_of(r));
    return out;
  });
}

StateResult<BatchJob> SqlBatches::begin_judgement(std::int64_t job_id) {
  return c_.guarded([&] {
    return c_.write([&] {
      BatchJob b = load(job_id, true);
      if (b.result_commit.empty() || b.judged)
        refuse(StateError::wrong_state,
               fmt::format("batch job {} {}: a result is judged once, after its job ends", job_id,
                           b.judged ? "was taken for judging already" : "has no result commit yet"));
      c_.db().exec("UPDATE batch_jobs SET judged=1 WHERE job_id=$1", {job_id});
      return load(job_id, false);
    });
  });
}

StateResult<BatchJob> SqlBatches::record_judgement(std::int64_t job_id, const nlohmann::json& review) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      BatchJob b = load(job_id, true);
      if (!b.judged || !b.review.is_null())
        refuse(StateError::wrong_state,
               fmt::format("batch job {} {}", job_id,
                           b.judged ? "was judged already" : "was not taken for judging (begin_judgement first)"));
      c_.db().exec("UPDATE batch_jobs SET review=$1 WHERE job_id=$2", {json_text(review), job_id});
      c_.audit(now, "batch.judge", fmt::format("job/{}", job_id),
               {{"commit", b.result_commit}, {"ok", review.value("ok", false)}});
      return load(job_id, false);
    });
  });
}

}  // namespace kzoo::store::sql
