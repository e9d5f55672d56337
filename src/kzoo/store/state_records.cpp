#include "kzoo/store/state_records.hpp"

#include <chrono>

namespace kzoo::store {

UnixMs system_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string_view to_string(State s) {
  switch (s) {
    case State::received: return "received";
    case State::queued: return "queued";
    case State::running: return "running";
    case State::accepted: return "accepted";
    case State::rejected: return "rejected";
    case State::failed: return "failed";
    case State::cancelled: return "cancelled";
  }
  return "?";
}

std::optional<State> parse_state(std::string_view s) {
  for (State st : {State::received, State::queued, State::running, State::accepted, State::rejected, State::failed,
                   State::cancelled})
    if (to_string(st) == s) return st;
  return std::nullopt;
}

bool is_final(State s) {
  return s == State::accepted || s == State::rejected || s == State::failed || s == State::cancelled;
}

State to_state(Outcome o) {
  switch (o) {
    case Outcome::accepted: return State::accepted;
    case Outcome::rejected: return State::rejected;
    case Outcome::failed: return State::failed;
  }
  return State::failed;
}

std::string_view to_string(StateError::Kind k) {
  switch (k) {
    case StateError::not_found: return "not_found";
    case StateError::wrong_state: return "wrong_state";
    case StateError::not_holder: return "not_holder";
    case StateError::invalid: return "invalid";
    case StateError::busy: return "busy";
    case StateError::io: return "io";
    case StateError::limited: return "limited";
  }
  return "?";
}

}  // namespace kzoo::store
