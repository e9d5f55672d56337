// KernelRepo writes: accepting a submission onto `main`, and job evidence on
// refs/jobs/<id>. Both build their trees in memory and move the ref with a
// compare-and-swap (git_reference_create_matching against the commit they
// read), which libgit2 performs under the ref's lock file: a stale writer gets
// GIT_EMODIFIED (or GIT_ELOCKED while another holds the lock), re-reads the
// ref, rebuilds on top of it and tries again, a bounded number of times.
#include <algorithm>
#include <chrono>
#include <random>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "kzoo/store/git_util.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/util/failpoint.hpp"

namespace kzoo::store {

namespace {

constexpr std::string_view kSrcPrefix = "src/";
constexpr std::string_view kHarnessPrefix = ".kernel_package/";
constexpr std::string_view kNoEmail = "unknown@kzoo.invalid";

bool is_race(int rc) { return rc == GIT_EMODIFIED || rc == GIT_ELOCKED || rc == GIT_EEXISTS; }

// Randomised, growing pause so that racing writers spread out.
void backoff(int attempt) {
  thread_local std::mt19937 rng{std::random_device{}()};
  int cap_us = std::min(200 << std::min(attempt, 8), 50000);
  std::uniform_int_distribution<int> d(0, cap_us);
  std::this_thread::sleep_for(std::chrono::microseconds(d(rng)));
}

Result<git::Signature> signature(const Person& p, std::string_view role) {
  git_signature* raw = nullptr;
  // libgit2 refuses an empty email (git itself would write "<>"); submitters
  // are known by id only, so they get a reserved, obviously fake address.
  std::string email = p.email.empty() ? std::string(kNoEmail) : p.email;
  if (int rc = git_signature_now(&raw, p.name.c_str(), email.c_str()); rc < 0)
    return git::fail_git(fmt::format("{} \"{} <{}>\" is not a valid git identity (no '<', '>' or newlines; name "
                                     "must not be empty)",
                                     role, p.name, p.email),
                         rc);
  return git::Signature(raw);
}

// Cleans up a commit message the way `git commit` does (trailing spaces,
// blank-line runs, final newline), so history reads the same in any client.
Result<std::string> prettify(const std::string& message) {
  if (message.find('\0') != std::string::npos)
    return fail("commit message contains a NUL byte; remove it");
  git_buf buf = GIT_BUF_INIT;
  if (int rc = git_message_prettify(&buf, message.c_str(), 0, '#'); rc < 0)
    return git::fail_git("cleaning up the commit message", rc);
  std::string out(buf.ptr, buf.size);
  git_buf_dispose(&buf);
  if (out.empty()) return fail("commit message is empty; say what is accepted and why");
  return out;
}

// A commit's message, cleaned up, and its author's and committer's signatures.
struct CommitText {
  std::string message;
  git::Signature author, committer;
};

Result<CommitText> commit_text(const std::string& message, const Person& author, const Person& committer) {
  auto msg = prettify(message);
  if (!msg) return tl::unexpected(msg.error());
  auto author_sig = signature(author, "author");
  if (!author_sig) return tl::unexpected(author_sig.error());
  auto committer_sig = signature(committer, "committer");
  if (!committer_sig) return tl::unexpected(committer_sig.error());
  return CommitText{std::move(*msg), std::move(*author_sig), std::move(*committer_sig)};
}

// What a write to one branch works on: the writer's turn (held while this
// lives), a fresh handle (nothing cached from an earlier, stale read) and
// the branch's head as read under the turn.
struct BranchWrite {
  std::shared_ptr<void> turn;
  git::Repo repo;
  git::Commit head;
};

Result<BranchWrite> begin_write(Result<std::shared_ptr<void>> turn, const std::string& dir, const std::string& ref_name) {
  if (!turn) return tl::unexpected(turn.error());
  auto repo = git::open_repo(dir);
  if (!repo) return tl::unexpected(repo.error());
  auto head = git::resolve_commit(repo->get(), ref_name);
  if (!head) return tl::unexpected(head.error());
  return BranchWrite{std::move(*turn), std::move(*repo), std::move(*head)};
}

// One commit of `tree` on `parent`, and `ref_name` moved to it only while it
// is still at `parent` (compare-and-swap). nullopt: another writer moved it
// first, and nothing points at the new commit.
Result<std::optional<std::string>> commit_and_move(git_repository* repo, const std::string& ref_name,
                                                   const git_commit* parent, const git_tree* tree,
                                                   const CommitText& text, const char* log) {
  const git_commit* parents[] = {parent};
  git_oid commit;
  if (int rc = git_commit_create(&commit, repo, nullptr, text.author.get(), text.committer.get(), nullptr,
                                 text.message.c_str(), tree, 1, parents);
      rc < 0)
    return git::fail_git("writing a commit", rc);
  git_reference* ref = nullptr;
  int rc = git_reference_create_matching(&ref, repo, ref_name.c_str(), &commit, 1, git_commit_id(parent), log);
  git::Reference owned(ref);
  if (rc == 0) return std::optional<std::string>(git::oid_hex(commit));
  if (is_race(rc)) return std::optional<std::string>();
  return git::fail_git("moving " + ref_name, rc);
}

// The ids of each tree from the root down to `path` (inclusive): trees[0] is
// the root tree, trees[i] the directory named by the first i segments.
Result<std::vector<git::Tree>> tree_chain(git_repository* repo, const git_tree* root,
                                          const std::vector<std::string>& segs) {
  std::vector<git::Tree> chain;
  auto r = git::subtree(repo, root, "");
  if (!r) return tl::unexpected(r.error());
  chain.push_back(std::move(*r));
  std::string path;
  for (const auto& s : segs) {
    path += path.empty() ? s : "/" + s;
    auto t = git::subtree(repo, root, path);
    if (!t) return tl::unexpected(t.error());
    chain.push_back(std::move(*t));
  }
  return chain;
}

Result<git_oid> replace_entry(git_repository* repo, const git_tree* base, const std::string& name, const git_oid& id,
                              git_filemode_t mode) {
  git_treebuilder* raw = nullptr;
  if (int rc = git_treebuilder_new(&raw, repo, base); rc < 0) return git::fail_git("creating a tree builder", rc);
  git::TreeBuilder bld(raw);
  if (int rc = git_treebuilder_insert(nullptr, bld.get(), name.c_str(), &id, mode); rc < 0)
    return git::fail_git(fmt::format("replacing {}", name), rc);
  git_oid out;
  if (int rc = git_treebuilder_write(&out, bld.get()); rc < 0) return git::fail_git("writing a tree", rc);
  return out;
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> segs;
  size_t start = 0;
  for (size_t slash; (slash = path.find('/', start)) != std::string::npos; start = slash + 1)
    segs.push_back(path.substr(start, slash - start));
  segs.push_back(path.substr(start));
  return segs;
}

struct Built {
  git_oid tree;
  git_oid parent;
  bool incumbent_moved = false;  // the package's src/ differs from `measured_src`: nothing built
};

// The id of `kernel_id`'s src/ tree at `commit`, or the zero oid when it has none.
Result<git_oid> src_tree_at(git_repository* repo, const git_commit* commit, const std::string& kernel_id) {
  git_tree* rraw = nullptr;
  if (int rc = git_commit_tree(&rraw, commit); rc < 0) return git::fail_git("reading a commit's tree", rc);
  git::Tree root(rraw);
  git_oid id{};
  git_tree_entry* e = nullptr;
  const std::string path = kernel_id + "/src";
  if (int rc = git_tree_entry_bypath(&e, root.get(), path.c_str()); rc == 0) {
    git_oid_cpy(&id, git_tree_entry_id(e));
    git_tree_entry_free(e);
  } else if (rc != GIT_ENOTFOUND) {
    return git::fail_git("looking up " + path, rc);
  }
  return id;
}

// One attempt's tree: HEAD's tree with the package's src/ and bench_result
// replaced. Returns the new root tree id and the parent it was built on.
Result<Built> build_accept_tree(git_repository* repo, const std::string& ref_name, const std::string& kernel_id,
                                const git::FileMap& src, const BenchResultUpdate& update,
                                const std::optional<git_oid>& measured_src) {
  auto head = git::resolve_commit(repo, ref_name);
  if (!head) return tl::unexpected(head.error());
  git_tree* rraw = nullptr;
  if (int rc = git_commit_tree(&rraw, head->get()); rc < 0) return git::fail_git("reading HEAD's tree", rc);
  git::Tree root(rraw);

  std::vector<std::string> segs = split(kernel_id);
  auto chain = tree_chain(repo, root.get(), segs);
  if (!chain) return fail(fmt::format("cannot accept into kernel {}: {}", kernel_id, chain.error().message));
  const git_tree* pkg = chain->back().get();
  if (measured_src) {  // the incumbent it was measured against must still be HEAD's src/
    git_oid now{};
    if (const git_tree_entry* se = git_tree_entry_byname(pkg, "src")) git_oid_cpy(&now, git_tree_entry_id(se));
    if (!git_oid_equal(&now, &*measured_src)) return Built{{}, *git_commit_id(head->get()), true};
  }
  auto harness = git::subtree(repo, pkg, ".kernel_package");
  if (!harness)
    return fail(fmt::format("cannot accept into {}: it is not a kernel package at HEAD (no .kernel_package/)",
                            kernel_id));

  std::string current;
  if (const git_tree_entry* e = git_tree_entry_byname(harness->get(), "bench_result.yaml")) {
    git_blob* braw = nullptr;
    if (int rc = git_blob_lookup(&braw, repo, git_tree_entry_id(e)); rc < 0)
      return git::fail_git(fmt::format("reading {}/.kernel_package/bench_result.yaml", kernel_id), rc);
    git::Blob b(braw);
    current.assign(static_cast<const char*>(git_blob_rawcontent(braw)), git_blob_rawsize(braw));
  }
  auto next = update(current);
  if (!next) return tl::unexpected(next.error());

  git_oid bench_id;
  if (int rc = git_blob_create_from_buffer(&bench_id, repo, next->data(), next->size()); rc < 0)
    return git::fail_git("writing bench_result.yaml", rc);
  auto harness_id = replace_entry(repo, harness->get(), "bench_result.yaml", bench_id, GIT_FILEMODE_BLOB);
  if (!harness_id) return tl::unexpected(harness_id.error());
  auto src_id = git::write_tree(repo, src);
  if (!src_id) return tl::unexpected(src_id.error());

  // The package with both parts replaced, then each ancestor up to the root.
  auto pkg_id = replace_entry(repo, pkg, ".kernel_package", *harness_id, GIT_FILEMODE_TREE);
  if (!pkg_id) return tl::unexpected(pkg_id.error());
  git_tree* praw = nullptr;
  if (int rc = git_tree_lookup(&praw, repo, &*pkg_id); rc < 0) return git::fail_git("reading the new package tree", rc);
  git::Tree pkg_tree(praw);
  auto id = replace_entry(repo, pkg_tree.get(), "src", *src_id, GIT_FILEMODE_TREE);
  if (!id) return tl::unexpected(id.error());
  for (size_t i = segs.size(); i-- > 0;) {
    id = replace_entry(repo, (*chain)[i].get(), segs[i], *id, GIT_FILEMODE_TREE);
    if (!id) return tl::unexpected(id.error());
  }
  return Built{*id, *git_commit_id(head->get())};
}

}  // namespace

Result<AcceptResult> KernelRepo::accept(const std::string& kernel_id, const package::PackageTree& submission,
                                        const BenchResultUpdate& update, const std::string& message,
                                        const Person& author, const std::string& measured_at) const {
  return accept(kernel_id, submission, update, message, author, measured_at, AcceptTarget{});
}

namespace {

// refs/heads/<branch> for a branch name git accepts.
Result<std::string> branch_ref(const std::string& branch) {
  std::string ref = "refs/heads/" + branch;
  int valid = 0;
  if (git_reference_name_is_valid(&valid, ref.c_str()) < 0 || !valid || branch.empty())
    return fail(fmt::format("\"{}\" is not a valid branch name", branch));
  return ref;
}

// Creates `ref` at `start_at` unless it exists (a racing creator wins; fine).
Result<void> ensure_branch(git_repository* repo, const std::string& ref, const std::string& start_at) {
  git_oid id;
  int rc = git_reference_name_to_id(&id, repo, ref.c_str());
  if (rc == 0) return {};
  if (rc != GIT_ENOTFOUND) return git::fail_git("reading " + ref, rc);
  if (start_at.empty()) return fail(fmt::format("{} does not exist and no commit was given to start it at", ref));
  auto at = git::resolve_commit(repo, start_at);
  if (!at) return tl::unexpected(at.error());
  git_reference* out = nullptr;
  rc = git_reference_create(&out, repo, ref.c_str(), git_commit_id(at->get()), 0, "kzoo: route started");
  git::Reference owned(out);
  if (rc < 0 && rc != GIT_EEXISTS) return git::fail_git("creating " + ref, rc);
  return {};
}

}  // namespace

Result<AcceptResult> KernelRepo::accept(const std::string& kernel_id, const package::PackageTree& submission,
                                        const BenchResultUpdate& update, const std::string& message,
                                        const Person& author, const std::string& measured_at,
                                        const AcceptTarget& target) const {
  auto target_ref = branch_ref(target.branch);
  if (!target_ref) return tl::unexpected(target_ref.error());
  const std::string ref_name = *target_ref;
  if (auto c = git::check_rel_path(kernel_id, "kernel ID"); !c) return tl::unexpected(c.error());
  git::FileMap src;
  for (const auto& f : submission.files) {
    std::string_view p = f.path;
    if (p.starts_with(kHarnessPrefix)) continue;  // the trusted harness and server bench_result stay
    if (!p.starts_with(kSrcPrefix))
      return fail(fmt::format("submission file {} is outside src/ and .kernel_package/ (rule store.accept-layout): "
                              "a package's authored code lives under src/; move it there",
                              f.path));
    std::string rel(p.substr(kSrcPrefix.size()));
    if (auto c = git::check_rel_path(rel, "submission file under src/"); !c) return tl::unexpected(c.error());
    if (!src.emplace(rel, git::FileBlob{f.content, false}).second)
      return fail(fmt::format("submission lists {} twice; a package tree holds each path once", f.path));
  }
  if (src.empty())
    return fail(fmt::format("submission for {} has no file under src/ (rule store.accept-empty-src): accepting it "
                            "would delete the kernel's source",
                            kernel_id));
  auto text = commit_text(message, author, options_.committer);
  if (!text) return tl::unexpected(text.error());

  std::optional<git_oid> measured_src;
  if (!measured_at.empty()) {
    auto repo = git::open_repo(dir_);
    if (!repo) return tl::unexpected(repo.error());
    auto at = git::resolve_commit(repo->get(), measured_at);
    if (!at) return fail(fmt::format("accept into {}: the commit it was measured at ({}) cannot be read: {}", kernel_id,
                                     measured_at, at.error().message));
    auto id = src_tree_at(repo->get(), at->get(), kernel_id);
    if (!id) return tl::unexpected(id.error());
    measured_src = *id;
  }
  {
    auto turn = writer_turn();
    if (!turn) return tl::unexpected(turn.error());
    auto repo = git::open_repo(dir_);
    if (!repo) return tl::unexpected(repo.error());
    if (auto e = ensure_branch(repo->get(), ref_name, target.start_at.empty() ? measured_at : target.start_at); !e)
      return tl::unexpected(e.error());
  }
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    auto turn = writer_turn();
    if (!turn) return tl::unexpected(turn.error());
    // A fresh handle per attempt: nothing cached from the stale read survives.
    auto repo = git::open_repo(dir_);
    if (!repo) return tl::unexpected(repo.error());
    auto built = build_accept_tree(repo->get(), ref_name, kernel_id, src, update, measured_src);
    if (!built) return tl::unexpected(built.error());
    if (built->incumbent_moved) {
      AcceptResult moved;
      moved.parent = git::oid_hex(built->parent);
      moved.attempts = attempt;
      moved.incumbent_moved = true;
      return moved;
    }
    git_tree* traw = nullptr;
    if (int rc = git_tree_lookup(&traw, repo->get(), &built->tree); rc < 0) return git::fail_git("reading a tree", rc);
    git::Tree tree(traw);
    git_commit* praw = nullptr;
    if (int rc = git_commit_lookup(&praw, repo->get(), &built->parent); rc < 0)
      return git::fail_git("reading the parent commit", rc);
    git::Commit parent(praw);
    const git_commit* parents[] = {parent.get()};
    git_oid commit;
    if (int rc = git_commit_create(&commit, repo->get(), nullptr, text->author.get(), text->committer.get(), nullptr,
                                   text->message.c_str(), tree.get(), 1, parents);
        rc < 0)
      return git::fail_git("writing the accept commit", rc);
    util::failpoint("repo.accept.before-ref");  // objects written, main not moved yet
    git_reference* ref = nullptr;
    std::string log = fmt::format("kzoo accept {}", kernel_id);
    int rc = git_reference_create_matching(&ref, repo->get(), ref_name.c_str(), &commit, 1, &built->parent, log.c_str());
    git::Reference owned(ref);
    if (rc == 0) return AcceptResult{git::oid_hex(commit), git::oid_hex(built->parent), attempt};
    if (!is_race(rc)) return git::fail_git(fmt::format("moving {} to the accept commit", ref_name), rc);
    backoff(attempt);  // someone else's commit landed first: rebuild on top of it
  }
  return fail(fmt::format("accept into {} gave up after {} attempts: {} kept moving under concurrent writers; "
                          "retry later or raise KernelRepoOptions::max_attempts",
                          kernel_id, options_.max_attempts, ref_name));
}

Result<std::string> KernelRepo::commit_files(const std::string& branch, const std::map<std::string, std::string>& files,
                                             const std::string& message, const Person& author) const {
  auto ref_name = branch_ref(branch);
  if (!ref_name) return tl::unexpected(ref_name.error());
  if (files.empty()) return fail("commit_files: no files given");
  auto text = commit_text(message, author, options_.committer);
  if (!text) return tl::unexpected(text.error());
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    auto w = begin_write(writer_turn(), dir_, *ref_name);
    if (!w) return tl::unexpected(w.error());
    auto* repo = &w->repo;
    auto* head = &w->head;
    git_tree* rraw = nullptr;
    if (int rc = git_commit_tree(&rraw, head->get()); rc < 0) return git::fail_git("reading the branch's tree", rc);
    git::Tree root(rraw);
    git_oid tree_id = *git_tree_id(root.get());
    for (const auto& [path, bytes] : files) {
      if (auto c = git::check_rel_path(path, "file"); !c) return tl::unexpected(c.error());
      std::vector<std::string> segs = split(path);
      git_tree* cur = nullptr;
      if (int rc = git_tree_lookup(&cur, repo->get(), &tree_id); rc < 0) return git::fail_git("reading a tree", rc);
      git::Tree now(cur);
      std::vector<std::string> dirs(segs.begin(), segs.end() - 1);
      auto chain = tree_chain(repo->get(), now.get(), dirs);
      if (!chain) return fail(fmt::format("cannot write {}: its folder must exist ({})", path, chain.error().message));
      git_oid id;
      if (int rc = git_blob_create_from_buffer(&id, repo->get(), bytes.data(), bytes.size()); rc < 0)
        return git::fail_git("writing " + path, rc);
      auto r = replace_entry(repo->get(), chain->back().get(), segs.back(), id, GIT_FILEMODE_BLOB);
      if (!r) return tl::unexpected(r.error());
      for (size_t i = dirs.size(); i-- > 0;) {
        r = replace_entry(repo->get(), (*chain)[i].get(), dirs[i], *r, GIT_FILEMODE_TREE);
        if (!r) return tl::unexpected(r.error());
      }
      tree_id = *r;
    }
    git_tree* traw = nullptr;
    if (int rc = git_tree_lookup(&traw, repo->get(), &tree_id); rc < 0) return git::fail_git("reading a tree", rc);
    git::Tree tree(traw);
    auto moved = commit_and_move(repo->get(), *ref_name, head->get(), tree.get(), *text, "kzoo: commit files");
    if (!moved) return tl::unexpected(moved.error());
    if (*moved) return **moved;
    backoff(attempt);
  }
  return fail(fmt::format("commit_files on {} gave up: the branch kept moving", branch));
}

Result<TreeCommit> KernelRepo::commit_tree(const std::string& branch, const std::string& expected_head,
                                           const std::string& tree_of, const std::string& message,
                                           const Person& author) const {
  auto ref_name = branch_ref(branch);
  if (!ref_name) return tl::unexpected(ref_name.error());
  auto text = commit_text(message, author, options_.committer);
  if (!text) return tl::unexpected(text.error());
  auto w = begin_write(writer_turn(), dir_, *ref_name);
  if (!w) return tl::unexpected(w.error());
  auto* repo = &w->repo;
  auto* head = &w->head;
  const std::string at = git::oid_hex(*git_commit_id(head->get()));
  if (at != expected_head) return TreeCommit{"", at, true};
  auto source = git::resolve_commit(repo->get(), tree_of);
  if (!source) return tl::unexpected(source.error());
  git_tree* traw = nullptr;
  if (int rc = git_commit_tree(&traw, source->get()); rc < 0) return git::fail_git("reading the pushed tree", rc);
  git::Tree tree(traw);
  auto moved = commit_and_move(repo->get(), *ref_name, head->get(), tree.get(), *text, "kzoo: pushed project files");
  if (!moved) return tl::unexpected(moved.error());
  // nullopt: a process without the writer's turn moved it (one host, no lock): the same answer.
  return *moved ? TreeCommit{**moved, at, false} : TreeCommit{"", at, true};
}

Result<bool> KernelRepo::move_branch(const std::string& branch, const std::string& from, const std::string& to) const {
  auto ref_name = branch_ref(branch);
  if (!ref_name) return tl::unexpected(ref_name.error());
  auto turn = writer_turn();
  if (!turn) return tl::unexpected(turn.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto a = git::resolve_commit(repo->get(), from);
  if (!a) return tl::unexpected(a.error());
  auto b = git::resolve_commit(repo->get(), to);
  if (!b) return tl::unexpected(b.error());
  git_reference* ref = nullptr;
  int rc = git_reference_create_matching(&ref, repo->get(), ref_name->c_str(), git_commit_id(b->get()), 1,
                                         git_commit_id(a->get()), "kzoo: move branch");
  git::Reference owned(ref);
  if (rc == 0) return true;
  if (is_race(rc)) return false;
  return git::fail_git("moving " + *ref_name, rc);
}

Result<std::shared_ptr<void>> KernelRepo::writer_turn() const {
  if (!options_.writer) return std::shared_ptr<void>();
  auto t = options_.writer->turn();
  if (!t) return fail("waiting for the repository's writer lock: " + t.error().message);
  return t;
}

Result<void> KernelRepo::set_ref(const std::string& ref, const std::string& commit) const {
  int valid = 0;
  if (git_reference_name_is_valid(&valid, ref.c_str()) < 0 || !valid || !ref.starts_with("refs/"))
    return fail(fmt::format("\"{}\" is not a valid full ref name", ref));
  auto turn = writer_turn();
  if (!turn) return tl::unexpected(turn.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto c = git::resolve_commit(repo->get(), commit);
  if (!c) return tl::unexpected(c.error());
  git_reference* out = nullptr;
  int rc = git_reference_create(&out, repo->get(), ref.c_str(), git_commit_id(c->get()), 1, "kzoo: set ref");
  git::Reference owned(out);
  if (rc < 0) return git::fail_git("setting " + ref, rc);
  return {};
}

Result<std::vector<std::string>> KernelRepo::list_refs(const std::string& prefix) const {
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  git_strarray names{};
  if (int rc = git_reference_list(&names, repo->get()); rc < 0) return git::fail_git("listing refs", rc);
  std::vector<std::string> out;
  for (size_t i = 0; i < names.count; ++i) {
    std::string n = names.strings[i];
    if (n.starts_with(prefix)) out.push_back(n);
  }
  git_strarray_dispose(&names);
  std::sort(out.begin(), out.end());
  return out;
}

Result<AcceptResult> KernelRepo::accept(const std::string& kernel_id, const package::PackageTree& submission,
                                        const std::string& bench_result_yaml, const std::string& message,
                                        const Person& author) const {
  return accept(
      kernel_id, submission, [&](const std::string&) -> Result<std::string> { return bench_result_yaml; }, message,
      author);
}

Result<std::string> job_evidence_ref(const std::string& job_id) {
  static const std::regex re("^[A-Za-z0-9_-]{1,128}$");
  if (!std::regex_match(job_id, re))
    return fail(fmt::format("job id \"{}\" cannot name an evidence ref: it must match ^[A-Za-z0-9_-]{{1,128}}$",
                            job_id));
  return "refs/jobs/" + job_id;
}

Result<std::string> KernelRepo::record_job_evidence(const std::string& job_id,
                                                    const std::map<std::string, std::string>& files,
                                                    const std::string& message) const {
  auto ref_name = job_evidence_ref(job_id);
  if (!ref_name) return tl::unexpected(ref_name.error());
  if (files.empty()) return fail(fmt::format("job {}: no evidence files given; nothing to record", job_id));
  git::FileMap map;
  for (const auto& [name, bytes] : files) {
    if (auto c = git::check_rel_path(name, fmt::format("evidence file of job {}", job_id)); !c)
      return tl::unexpected(c.error());
    map.emplace(name, git::FileBlob{bytes, false});
  }
  auto msg = prettify(message.empty() ? fmt::format("Evidence of job {}", job_id) : message);
  if (!msg) return tl::unexpected(msg.error());
  auto sig = signature(options_.committer, "committer");
  if (!sig) return tl::unexpected(sig.error());

  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    auto turn = writer_turn();
    if (!turn) return tl::unexpected(turn.error());
    auto repo = git::open_repo(dir_);
    if (!repo) return tl::unexpected(repo.error());
    git::Commit parent;
    git_oid parent_id;
    int rc = git_reference_name_to_id(&parent_id, repo->get(), ref_name->c_str());
    if (rc == 0) {
      git_commit* praw = nullptr;
      if (int rc2 = git_commit_lookup(&praw, repo->get(), &parent_id); rc2 < 0)
        return git::fail_git(fmt::format("reading {}", *ref_name), rc2);
      parent.reset(praw);
    } else if (rc != GIT_ENOTFOUND) {
      return git::fail_git(fmt::format("reading {}", *ref_name), rc);
    }
    auto tree_id = git::write_tree(repo->get(), map);
    if (!tree_id) return tl::unexpected(tree_id.error());
    git_tree* traw = nullptr;
    if (int rc2 = git_tree_lookup(&traw, repo->get(), &*tree_id); rc2 < 0) return git::fail_git("reading a tree", rc2);
    git::Tree tree(traw);
    const git_commit* parents[] = {parent.get()};
    git_oid commit;
    if (int rc2 = git_commit_create(&commit, repo->get(), nullptr, sig->get(), sig->get(), nullptr, msg->c_str(),
                                    tree.get(), parent ? 1 : 0, parents);
        rc2 < 0)
      return git::fail_git(fmt::format("writing the evidence commit of job {}", job_id), rc2);
    git_reference* ref = nullptr;
    std::string log = fmt::format("kzoo evidence {}", job_id);
    // First evidence: create without force (GIT_EEXISTS if another writer
    // won); later: compare-and-swap against the commit we parented on.
    int rc3 = parent ? git_reference_create_matching(&ref, repo->get(), ref_name->c_str(), &commit, 1, &parent_id,
                                                     log.c_str())
                     : git_reference_create(&ref, repo->get(), ref_name->c_str(), &commit, 0, log.c_str());
    git::Reference owned(ref);
    if (rc3 == 0) return git::oid_hex(commit);
    if (!is_race(rc3)) return git::fail_git(fmt::format("moving {}", *ref_name), rc3);
    backoff(attempt);
  }
  return fail(fmt::format("recording evidence of job {} gave up after {} attempts: {} kept moving", job_id,
                          options_.max_attempts, *ref_name));
}

Result<std::string> KernelRepo::record_job_tree(const std::string& job_id, const package::PackageTree& tree,
                                                const std::string& parent, const std::string& message) const {
  auto ref_name = job_evidence_ref(job_id);
  if (!ref_name) return tl::unexpected(ref_name.error());
  git::FileMap map;
  for (const auto& f : tree.files) {
    if (auto c = git::check_rel_path(f.path, fmt::format("a file of job {}'s submit directory", job_id)); !c)
      return tl::unexpected(c.error());
    map.emplace(f.path, git::FileBlob{f.content, f.executable});
  }
  auto msg = prettify(message);
  if (!msg) return tl::unexpected(msg.error());
  auto sig = signature(options_.committer, "committer");
  if (!sig) return tl::unexpected(sig.error());
  auto turn = writer_turn();
  if (!turn) return tl::unexpected(turn.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto base = git::resolve_commit(repo->get(), parent);
  if (!base) return fail(fmt::format("job {}: its base commit {} is not in the repository", job_id, parent));
  auto tree_id = git::write_tree(repo->get(), map);
  if (!tree_id) return tl::unexpected(tree_id.error());
  git_tree* traw = nullptr;
  if (int rc = git_tree_lookup(&traw, repo->get(), &*tree_id); rc < 0) return git::fail_git("reading a tree", rc);
  git::Tree t(traw);
  const git_commit* parents[] = {base->get()};
  git_oid commit;
  if (int rc = git_commit_create(&commit, repo->get(), nullptr, sig->get(), sig->get(), nullptr, msg->c_str(), t.get(),
                                 1, parents);
      rc < 0)
    return git::fail_git(fmt::format("writing the result commit of job {}", job_id), rc);
  git_reference* ref = nullptr;
  // Forced: the ref is this job's alone, and only its lease holder writes it.
  const std::string log = fmt::format("kzoo batch result {}", job_id);
  int rc = git_reference_create(&ref, repo->get(), ref_name->c_str(), &commit, 1, log.c_str());
  git::Reference owned(ref);
  if (rc < 0) return git::fail_git(fmt::format("moving {}", *ref_name), rc);
  return git::oid_hex(commit);
}

Result<std::map<std::string, std::string>> KernelRepo::read_job_evidence(const std::string& job_id) const {
  auto ref_name = job_evidence_ref(job_id);
  if (!ref_name) return tl::unexpected(ref_name.error());
  auto repo = git::open_repo(dir_);
  if (!repo) return tl::unexpected(repo.error());
  auto commit = git::resolve_commit(repo->get(), *ref_name);
  if (!commit) return fail(fmt::format("job {} has no recorded evidence ({} does not exist)", job_id, *ref_name));
  git_tree* traw = nullptr;
  if (int rc = git_commit_tree(&traw, commit->get()); rc < 0) return git::fail_git("reading the evidence tree", rc);
  git::Tree tree(traw);
  struct Walk {
    git_repository* repo;
    std::map<std::string, std::string> files;
    int error = 0;
  } walk{repo->get(), {}, 0};
  auto cb = [](const char* root, const git_tree_entry* e, void* payload) -> int {
    auto* w = static_cast<Walk*>(payload);
    if (git_tree_entry_type(e) != GIT_OBJECT_BLOB) return 0;
    git_blob* braw = nullptr;
    if ((w->error = git_blob_lookup(&braw, w->repo, git_tree_entry_id(e))) < 0) return -1;
    git::Blob b(braw);
    w->files[std::string(root) + git_tree_entry_name(e)] =
        std::string(static_cast<const char*>(git_blob_rawcontent(braw)), git_blob_rawsize(braw));
    return 0;
  };
  if (int rc = git_tree_walk(tree.get(), GIT_TREEWALK_PRE, cb, &walk); rc < 0)
    return git::fail_git(fmt::format("reading evidence of job {}", job_id), walk.error ? walk.error : rc);
  return std::move(walk.files);
}

}  // namespace kzoo::store
