// The accept policy: from the judge's signed benchmark output (with its A/B
// figures) to the service's decision. A pure function, so the rule a
// submitter is held to can be read here and tested with crafted documents.
//
// A submission is accepted when ALL hold:
//   1. overall.build_ok is true and the document has at least one case;
//   2. every case has status "ok" and correct == true;
//   3. every gate of every case passed;
//   4. overall.accept is true (the judge agrees: no rule above it missed);
//   5. when the package has an incumbent (any accepted source before this one):
//      every case carries an A/B `speedup` (the incumbent and the submission
//      timed side by side in the same run, judge/kzoo_judge/ab.py), and
//          G = geometric mean over cases of speedup.value
//          G > 1 + max(min_gain, noise_k * noise),  noise = the largest per-case
//          speedup.spread (p90 - p10 over the median of the per-pair ratios).
//      The speed-up is a ratio of times on the same work, so it is the ratio of
//      the primary metric whatever its direction (GB/s, TFLOP/s or µs).
//      A case with no speedup (the incumbent raised, died or timed out) is a
//      rejection: the comparison failed closed, because the submission shares
//      the sandbox with the incumbent and could have caused that failure. An
//      INCORRECT incumbent does not block (only the submission must be correct)
//      and its times still count; it is reported in `notes`.
//   A package without an incumbent (its first submission) is accepted on 1-4.
//
// Why max(min_gain, k * spread): min_gain stops churn by changes too small to
// matter; k * spread stops a noisy measurement from passing as a gain. The
// spread is a p10-p90 width (about 2.6 sigma for normal noise), and the median
// ratio over P pairs varies by roughly 1.25 sigma / sqrt(P), so for normal
// noise k = 0.5 would do. Runner noise is not normal: on a loaded 2-core
// machine an identical source measured 1.28x with 3 pairs. k = 1 (the whole
// p10-p90 width) keeps noise from crowning a submission; a real gain clears it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kzoo::verdict {

struct Policy {
  double min_gain = 0.01;  // the smallest speed-up worth a commit (1%)
  double noise_k = 1.0;    // multiple of the per-pair ratio spread the gain must clear
};

enum class Outcome { accepted, rejected };
const char* to_string(Outcome o);

struct CaseFigures {
  std::string test_case_id;
  std::string status;                 // the submission's case status
  bool correct = false;
  nlohmann::json metrics;             // the submission's metrics (object)
  std::optional<double> speedup;      // incumbent median / submission median
  std::optional<double> ratio_spread; // spread of the per-pair ratios
  std::string incumbent_status;       // empty without A/B
  nlohmann::json incumbent_metrics;   // null without A/B
};

struct Verdict {
  Outcome outcome = Outcome::rejected;
  std::vector<std::string> reasons;  // why rejected (empty when accepted)
  std::vector<std::string> notes;    // facts worth telling the submitter either way
  std::string summary;               // one sentence
  std::vector<CaseFigures> cases;
  std::optional<double> geomean_speedup;
  std::optional<double> required_speedup;  // the bar G had to clear
  bool had_incumbent = false;

  nlohmann::json to_json() const;
};

// `document` is a verified benchmark_output document; `has_incumbent` says
// whether the package had accepted source to beat.
Verdict decide(const nlohmann::json& document, bool has_incumbent, const Policy& policy = {});

}  // namespace kzoo::verdict
