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
//          G = geometric mean over cases of speedup.value > 1 + min_gain, and
//          W = sum over cases of speedup.faster_pairs out of N = sum of
//          speedup.pairs has P(Binomial(N, 1/2) >= W) <= max_p (a sign test).
//      The speed-up is a ratio of times on the same work, so it is the ratio of
//      the primary metric whatever its direction (GB/s, TFLOP/s or µs).
//      A case with no speedup (the incumbent raised, died or timed out) is a
//      rejection: the comparison failed closed, because the submission shares
//      the sandbox with the incumbent and could have caused that failure. An
//      INCORRECT incumbent does not block (only the submission must be correct)
//      and its times still count; it is reported in `notes`.
//   A package without an incumbent (its first submission) is accepted on 1-4.
//
// Why a sign test, and not a bar made of the ratios' spread: runner noise is
// not normal (a loaded 2-core machine measured an identical source at 1.28x
// over 3 pairs, and a real 2.9x gain with a p10-p90 spread of 3.5), so any
// fixed multiple of the spread either crowns noise or sinks real gains in a
// noisy hour. The pairs are timed alternately (A B, B A, ...) on identical
// inputs, so for an identical source each pair is a fair coin: counting the
// pairs the submission won, pooled over cases, and asking the one-sided
// binomial probability of that many wins or more to be <= max_p (default
// 0.01) bounds the chance that noise alone crowns a submission by max_p,
// whatever the noise looks like. min_gain (1%) stops churn by changes too small
// to matter: the geometric mean of the per-case speed-ups must exceed it too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kzoo::verdict {

struct Policy {
  double min_gain = 0.01;  // the smallest speed-up worth a commit (1%)
  double max_p = 0.01;     // largest chance, under "no difference", of the wins seen (sign test)
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
  int pairs = 0;                      // A/B pairs timed
  int faster_pairs = 0;               // pairs the submission won
  std::string incumbent_status;       // empty without A/B
  nlohmann::json incumbent_metrics;   // null without A/B
  // What a contributor acts on, carried from the judge's case document (never
  // recomputed): `shape` (the metas' workload and dims, as text) and
  // `params` (the same as the metas hold them), `time_us`,
  // `roofline_us` and `roofline_pct` (the roofline gate's figures: 100 =
  // as fast as the device can go), `error_rel`, `error_abs_max`,
  // `bound_ratio_max`, `worst` (the element farthest outside the bound:
  // output, index, shape, out, expected) and `top_kernels` (name, count,
  // time_us, share) where the judge reported them, `gates` with units, and
  // the judge's `message`. An object; keys the document lacks are absent.
  nlohmann::json feedback = nlohmann::json::object();
};

struct Verdict {
  Outcome outcome = Outcome::rejected;
  std::vector<std::string> reasons;  // why rejected (empty when accepted)
  std::vector<std::string> notes;    // facts worth telling the submitter either way
  std::string summary;               // one sentence
  std::vector<CaseFigures> cases;
  std::optional<double> geomean_speedup;
  std::optional<double> required_speedup;  // the bar G had to clear: 1 + min_gain
  std::optional<double> sign_test_p;       // P(Binomial(pairs, 1/2) >= wins)
  int pairs = 0, faster_pairs = 0;         // pooled over cases
  bool had_incumbent = false;
  // What produced the figures, copied from the document: the device class (a result
  // counts for a kernel only on its arch) and the judge's provenance record.
  std::string device_class;
  nlohmann::json provenance;

  nlohmann::json to_json() const;
};

// One-sided sign test: P(X >= wins) for X ~ Binomial(n, 1/2).
double sign_test_p(int wins, int n);

// `document` is a verified benchmark_output document; `has_incumbent` says
// whether the package had accepted source to beat.
// `metas` (KERNEL_ZOO_TEST_CASE_METAS of the trusted harness, or null) name
// each case's workload and shape in the reasons and the feedback.
//
// Reasons: one per distinct failure, not one per case -- a correctness
// failure that ends every case of a workload reads once, naming the cases it
// ended ("cases a, b: ...") and the shape; every gate's figures carry their
// unit (gate_unit).
Verdict decide(const nlohmann::json& document, bool has_incumbent, const Policy& policy = {},
               const nlohmann::json& metas = nullptr);

// The unit of a judge gate's value and limit ("us", "kernels per call", ...);
// empty for a gate this service does not know.
std::string gate_unit(const std::string& gate);

}  // namespace kzoo::verdict
