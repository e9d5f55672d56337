#include <mutex>

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "kzoo/store/open_state.hpp"
#include "kzoo/store/repo_writer.hpp"

namespace kzoo::store {

namespace {

class PgRepoWriter final : public RepoWriterLock, public std::enable_shared_from_this<PgRepoWriter> {
 public:
  explicit PgRepoWriter(std::string url) : url_(std::move(url)) {}

  Result<std::shared_ptr<void>> turn() override {
    auto t = std::make_shared<Turn>(shared_from_this());
    // A dropped connection is reopened once: the server may have restarted.
    for (int attempt = 1;; ++attempt) {
      try {
        if (!conn_) conn_ = std::make_unique<pqxx::connection>(url_);
        pqxx::nontransaction n(*conn_);
        n.exec("SELECT pg_advisory_lock(" + std::to_string(kRepoWriterKey) + ")");
        t->held = true;
        return std::static_pointer_cast<void>(t);
      } catch (const pqxx::broken_connection& e) {
        conn_.reset();
        if (attempt == 2)
          return fail(fmt::format("cannot reach {} for the repository's writer lock: {}", redact_state_url(url_), e.what()));
      } catch (const std::exception& e) {
        conn_.reset();
        return fail(fmt::format("taking the repository's writer lock on {}: {}", redact_state_url(url_), e.what()));
      }
    }
  }

 private:
  struct Turn {
    explicit Turn(std::shared_ptr<PgRepoWriter> w) : owner(std::move(w)), lk(owner->m_) {}
    ~Turn() {
      if (!held) return;
      try {
        pqxx::nontransaction n(*owner->conn_);
        n.exec("SELECT pg_advisory_unlock(" + std::to_string(kRepoWriterKey) + ")");
      } catch (const std::exception&) {
        owner->conn_.reset();  // the session ends, and the lock with it
      }
    }
    std::shared_ptr<PgRepoWriter> owner;
    std::unique_lock<std::mutex> lk;
    bool held = false;
  };

  std::string url_;
  std::mutex m_;
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace

std::shared_ptr<RepoWriterLock> pg_repo_writer(const std::string& url) { return std::make_shared<PgRepoWriter>(url); }

}  // namespace kzoo::store
