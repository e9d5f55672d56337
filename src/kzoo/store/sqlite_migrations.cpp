// The schema in SQLite's dialect. Append a migration to change it, with the
// same number and description in pg_migrations.cpp; never edit a released one.
#include "kzoo/store/sqlite_state.hpp"

namespace kzoo::store {

namespace {

// Times are UnixMs integers; JSON columns hold JSON text. The CHECKs keep the
// state machine's invariants even against hand-edited rows.
constexpr sql::Migration kMigrations[] = {
    {1, "submissions and jobs", R"SQL(
CREATE TABLE submissions (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  kernel_id       TEXT    NOT NULL CHECK (length(kernel_id) BETWEEN 1 AND 200),
  submitter_id    TEXT    NOT NULL CHECK (length(submitter_id) BETWEEN 1 AND 128),
  summary         TEXT    NOT NULL DEFAULT '',
  package_path    TEXT    NOT NULL CHECK (length(package_path) > 0),
  sha256          TEXT    NOT NULL CHECK (length(sha256) = 64),
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN
                    ('received','queued','running','accepted','rejected','failed','cancelled')),
  verdict         TEXT,
  reasons         TEXT    NOT NULL DEFAULT '[]',
  accepted_commit TEXT    NOT NULL DEFAULT '',
  CHECK ((state = 'accepted') = (length(accepted_commit) = 40))
);
CREATE TABLE jobs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  submission_id    INTEGER NOT NULL REFERENCES submissions(id) ON DELETE RESTRICT,
  state            TEXT    NOT NULL CHECK (state IN
                     ('queued','running','accepted','rejected','failed','cancelled')),
  attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
  lease_owner      TEXT,
  lease_expires_at INTEGER,
  heartbeat_at     INTEGER,
  result           TEXT,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  CHECK ((state = 'running') = (lease_expires_at IS NOT NULL)),
  CHECK (state <> 'running' OR lease_owner IS NOT NULL)
);
-- At most one active job per submission.
CREATE UNIQUE INDEX jobs_one_active ON jobs(submission_id) WHERE state IN ('queued','running');
)SQL"},
    {2, "indexes for claiming, lease expiry and listing", R"SQL(
CREATE INDEX jobs_queued ON jobs(id) WHERE state = 'queued';
CREATE INDEX jobs_leases ON jobs(lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_by_submission ON jobs(submission_id, id);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE INDEX submissions_by_kernel ON submissions(kernel_id, id);
CREATE INDEX submissions_by_submitter ON submissions(submitter_id, id);
)SQL"},
    {3, "routes (board): a submission's target route and kind, and each route's owner", R"SQL(
ALTER TABLE submissions ADD COLUMN route TEXT NOT NULL DEFAULT '' CHECK (length(route) <= 64);
ALTER TABLE submissions ADD COLUMN kind TEXT NOT NULL DEFAULT 'submission' CHECK (kind IN ('submission','baseline'));
CREATE TABLE routes (
  name       TEXT    PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
  owner      TEXT    NOT NULL CHECK (length(owner) BETWEEN 1 AND 128),
  created_at INTEGER NOT NULL
);
CREATE INDEX submissions_by_route ON submissions(route, id);
CREATE INDEX submissions_by_kind ON submissions(kind, kernel_id, id);
)SQL"},
    {4, "users, tokens, the audit trail, held jobs, per-token usage", R"SQL(
CREATE TABLE users (
  name       TEXT    PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
  role       TEXT    NOT NULL CHECK (role IN ('maintainer','member','outsider')),
  created_at INTEGER NOT NULL
);
-- Only a hash of each token's secret is kept (access/token.hpp).
CREATE TABLE tokens (
  id           TEXT    PRIMARY KEY CHECK (length(id) = 16),
  user_name    TEXT    NOT NULL REFERENCES users(name) ON DELETE RESTRICT,
  kind         TEXT    NOT NULL CHECK (kind IN ('person','agent','runner')),
  label        TEXT    NOT NULL DEFAULT '' CHECK ((kind = 'person') = (label = '')),
  hash         BLOB    NOT NULL CHECK (length(hash) = 32),
  created_at   INTEGER NOT NULL,
  created_by   TEXT    NOT NULL,
  expires_at   INTEGER,
  revoked_at   INTEGER,
  last_used_at INTEGER,
  limit_submissions_per_hour INTEGER CHECK (limit_submissions_per_hour >= 0),
  limit_concurrent_jobs      INTEGER CHECK (limit_concurrent_jobs >= 0),
  limit_upload_bytes_per_day INTEGER CHECK (limit_upload_bytes_per_day >= 0)
);
CREATE INDEX tokens_by_user ON tokens(user_name);
-- Append-only: rows are written in the transaction of the change they record
-- and can be neither changed nor removed.
CREATE TABLE audit (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  at       INTEGER NOT NULL,
  who      TEXT    NOT NULL,
  token_id TEXT    NOT NULL DEFAULT '',
  action   TEXT    NOT NULL,
  target   TEXT    NOT NULL DEFAULT '',
  detail   TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_by_who ON audit(who, id);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
  BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
  BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END;
ALTER TABLE submissions ADD COLUMN token_id TEXT NOT NULL DEFAULT '';
ALTER TABLE submissions ADD COLUMN package_bytes INTEGER NOT NULL DEFAULT 0 CHECK (package_bytes >= 0);
CREATE INDEX submissions_by_token ON submissions(token_id, created_at);
ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1));
ALTER TABLE jobs ADD COLUMN released_by TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN released_at INTEGER;
CREATE INDEX jobs_held ON jobs(id) WHERE state = 'queued' AND held = 1;
)SQL"},
    {5, "pull requests (held with the reason PullRequest until a route's owner merges them), comments and reviews; "
        "boards' status as maintainers set it", R"SQL(
ALTER TABLE jobs ADD COLUMN hold_reason TEXT NOT NULL DEFAULT ''
  CHECK (hold_reason IN ('', 'JobHeldAdmin', 'PullRequest'));
UPDATE jobs SET hold_reason = 'JobHeldAdmin' WHERE held = 1;
CREATE TABLE pulls (
  submission_id INTEGER PRIMARY KEY REFERENCES submissions(id),
  route         TEXT    NOT NULL CHECK (length(route) <= 64),  -- '': aimed at main
  author        TEXT    NOT NULL,
  state         TEXT    NOT NULL DEFAULT 'open' CHECK (state IN ('open','merged','closed')),
  created_at    INTEGER NOT NULL,
  decided_by    TEXT    NOT NULL DEFAULT '',
  decided_at    INTEGER
);
CREATE INDEX pulls_by_route ON pulls(route, state, submission_id);
CREATE TABLE comments (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  submission_id INTEGER NOT NULL REFERENCES pulls(submission_id),
  who           TEXT    NOT NULL,
  token_id      TEXT    NOT NULL DEFAULT '',
  kind          TEXT    NOT NULL CHECK (kind IN ('comment','approve','request_changes')),
  body          TEXT    NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
  at            INTEGER NOT NULL
);
CREATE INDEX comments_by_pull ON comments(submission_id, id);
-- A board's status as its maintainers set it (scienceslack.json's is the default).
CREATE TABLE board_status (
  version    INTEGER PRIMARY KEY CHECK (version >= 1),
  status     TEXT    NOT NULL CHECK (status IN ('active','saturated','superseded','flawed')),
  set_by     TEXT    NOT NULL,
  set_at     INTEGER NOT NULL
);
)SQL"},
    {6, "the server that received each submission (a restarted server recovers only its own) and the client "
        "address of each audit row", R"SQL(
ALTER TABLE submissions ADD COLUMN received_by TEXT NOT NULL DEFAULT '';
CREATE INDEX submissions_received ON submissions(received_by, id) WHERE state = 'received';
ALTER TABLE audit ADD COLUMN address TEXT NOT NULL DEFAULT '';
)SQL"},
    {7, "issues (anyone signed in opens them; their author or a maintainer closes them) and their comments", R"SQL(
CREATE TABLE issues (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  title         TEXT    NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
  body          TEXT    NOT NULL CHECK (length(body) <= 20000),
  author        TEXT    NOT NULL,
  token_id      TEXT    NOT NULL DEFAULT '',
  state         TEXT    NOT NULL DEFAULT 'open' CHECK (state IN ('open','closed')),
  created_at    INTEGER  NOT NULL,
  updated_at    INTEGER  NOT NULL,
  closed_by     TEXT    NOT NULL DEFAULT '',
  closed_at     INTEGER,
  close_reason  TEXT    NOT NULL DEFAULT '' CHECK (length(close_reason) <= 1000)
);
CREATE INDEX issues_by_state ON issues(state, id);
CREATE INDEX issues_by_author ON issues(author, id);
CREATE INDEX issues_by_token ON issues(token_id, created_at);
CREATE TABLE issue_comments (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  issue_id      INTEGER  NOT NULL REFERENCES issues(id),
  who           TEXT    NOT NULL,
  token_id      TEXT    NOT NULL DEFAULT '',
  body          TEXT    NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
  at            INTEGER  NOT NULL
);
CREATE INDEX issue_comments_by_issue ON issue_comments(issue_id, id);
CREATE INDEX issue_comments_by_token ON issue_comments(token_id, at);
)SQL"},
    {8, "the compute capability a job needs (desc.yaml min_arch_feature, the task's min_compute_capability) "
        "and which runner last passed it over for lacking it", R"SQL(
ALTER TABLE jobs ADD COLUMN requires_cc INTEGER NOT NULL DEFAULT 0 CHECK (requires_cc >= 0);
ALTER TABLE jobs ADD COLUMN passed_over TEXT NOT NULL DEFAULT '';
)SQL"},
    {9, "users' own batch jobs (the seed's sbatch): a job's kind, grade or batch; a batch job has no submission, "
        "and its script, limits, base commit, submit directory and how it ended in batch_jobs", R"SQL(
-- SQLite cannot drop a NOT NULL: jobs is rebuilt with submission_id nullable
-- (a batch job has none) and its kind; ids and the AUTOINCREMENT counter are
-- kept, so a batch job's id never names an earlier graded job's refs/jobs/<id>.
CREATE TABLE jobs_v9 (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  submission_id    INTEGER REFERENCES submissions(id) ON DELETE RESTRICT,
  state            TEXT    NOT NULL CHECK (state IN
                     ('queued','running','accepted','rejected','failed','cancelled')),
  attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
  lease_owner      TEXT,
  lease_expires_at INTEGER,
  heartbeat_at     INTEGER,
  result           TEXT,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  held             INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1)),
  released_by      TEXT    NOT NULL DEFAULT '',
  released_at      INTEGER,
  hold_reason      TEXT    NOT NULL DEFAULT '' CHECK (hold_reason IN ('', 'JobHeldAdmin', 'PullRequest')),
  requires_cc      INTEGER NOT NULL DEFAULT 0 CHECK (requires_cc >= 0),
  passed_over      TEXT    NOT NULL DEFAULT '',
  kind             TEXT    NOT NULL DEFAULT 'grade' CHECK (kind IN ('grade','batch')),
  CHECK ((state = 'running') = (lease_expires_at IS NOT NULL)),
  CHECK (state <> 'running' OR lease_owner IS NOT NULL),
  CHECK ((kind = 'grade') = (submission_id IS NOT NULL))
);
INSERT INTO jobs_v9 (id, submission_id, state, attempts, max_attempts, lease_owner, lease_expires_at, heartbeat_at,
                     result, created_at, started_at, finished_at, held, released_by, released_at, hold_reason,
                     requires_cc, passed_over)
  SELECT id, submission_id, state, attempts, max_attempts, lease_owner, lease_expires_at, heartbeat_at, result,
         created_at, started_at, finished_at, held, released_by, released_at, hold_reason, requires_cc, passed_over
  FROM jobs;
DELETE FROM sqlite_sequence WHERE name = 'jobs_v9';
INSERT INTO sqlite_sequence(name, seq) SELECT 'jobs_v9', seq FROM sqlite_sequence WHERE name = 'jobs';
DROP TABLE jobs;
ALTER TABLE jobs_v9 RENAME TO jobs;
CREATE UNIQUE INDEX jobs_one_active ON jobs(submission_id) WHERE state IN ('queued','running');
CREATE INDEX jobs_queued ON jobs(id) WHERE state = 'queued';
CREATE INDEX jobs_leases ON jobs(lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_by_submission ON jobs(submission_id, id);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE INDEX jobs_held ON jobs(id) WHERE state = 'queued' AND held = 1;
CREATE TABLE batch_jobs (
  job_id        INTEGER  PRIMARY KEY REFERENCES jobs(id) ON DELETE RESTRICT,
  owner         TEXT    NOT NULL CHECK (length(owner) BETWEEN 1 AND 64),
  token_id      TEXT    NOT NULL DEFAULT '',
  name          TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  script        TEXT    NOT NULL CHECK (length(script) BETWEEN 1 AND 320),
  script_text   TEXT    NOT NULL CHECK (length(script_text) BETWEEN 1 AND 65536),
  partition_name TEXT   NOT NULL CHECK (length(partition_name) BETWEEN 1 AND 64),
  time_s        INTEGER NOT NULL CHECK (time_s >= 1),
  cpus          INTEGER NOT NULL CHECK (cpus >= 1),
  memory_mb     INTEGER NOT NULL CHECK (memory_mb >= 1),
  gpus          INTEGER NOT NULL DEFAULT 0 CHECK (gpus >= 0),
  route         TEXT    NOT NULL DEFAULT '' CHECK (length(route) <= 64),
  base_commit   TEXT    NOT NULL CHECK (length(base_commit) = 40),
  package_path  TEXT    NOT NULL CHECK (length(package_path) > 0),
  sha256        TEXT    NOT NULL CHECK (length(sha256) = 64),
  package_bytes INTEGER  NOT NULL DEFAULT 0 CHECK (package_bytes >= 0),
  end_state     TEXT    NOT NULL DEFAULT '' CHECK (end_state IN
                  ('','COMPLETED','FAILED','TIMEOUT','CANCELLED','NODE_FAIL','OUT_OF_MEMORY')),
  exit_code     INTEGER,
  exit_signal   INTEGER,
  elapsed_ms    INTEGER,
  result_commit TEXT    NOT NULL DEFAULT '' CHECK (result_commit = '' OR length(result_commit) = 40),
  judged        INTEGER NOT NULL DEFAULT 0 CHECK (judged IN (0, 1)),
  review        TEXT
);
CREATE INDEX batch_jobs_by_owner ON batch_jobs(owner, job_id);
CREATE INDEX batch_jobs_by_token ON batch_jobs(token_id, job_id);
CREATE INDEX batch_jobs_unjudged ON batch_jobs(job_id) WHERE judged = 0 AND result_commit <> '';
)SQL"},
    {10, "the GPUs of one node a job needs (the task's environment.gpus, 1 when it names none; a batch job's "
         "--gres), so that a runner with fewer leaves it", R"SQL(
ALTER TABLE jobs ADD COLUMN requires_gpus INTEGER NOT NULL DEFAULT 1 CHECK (requires_gpus >= 0);
-- A batch job named its GPUs when it was submitted. A graded job queued
-- before this recorded nothing of its task's: 1 lets any GPU runner take it,
-- as before, and the worker's own check of the task still applies.
UPDATE jobs SET requires_gpus = (SELECT b.gpus FROM batch_jobs b WHERE b.job_id = jobs.id) WHERE kind = 'batch';
)SQL"},
};

}  // namespace

std::span<const sql::Migration> sqlite_migrations() { return kMigrations; }

}  // namespace kzoo::store
