#include "kzoo/task/lint.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "kzoo/format/json_text.hpp"

namespace kzoo::task {

using nlohmann::json;

// ------------------------------------------------------- device classes ---

Result<DeviceClass> device_class_from_json(const json& doc, const std::string& wanted) {
  if (!doc.is_object() || !doc.contains("classes") || !doc["classes"].is_object()) {
    return fail("device classes: expected an object with \"classes\"");
  }
  std::string name = wanted;
  if (name.empty() && doc.contains("default") && doc["default"].is_string()) name = doc["default"];
  const json& classes = doc["classes"];
  if (!classes.contains(name)) {
    std::string known;
    for (auto it = classes.begin(); it != classes.end(); ++it) known += (known.empty() ? "" : ", ") + it.key();
    return fail("unknown device class '" + name + "' (known: " + known + ")");
  }
  const json& c = classes[name];
  DeviceClass d;
  d.name = name;
  if (c.contains("bandwidth_GBps") && c["bandwidth_GBps"].is_number()) d.bandwidth_GBps = c["bandwidth_GBps"];
  if (c.contains("tflops") && c["tflops"].is_object()) {
    for (auto it = c["tflops"].begin(); it != c["tflops"].end(); ++it) {
      if (it->is_number()) d.tflops[it.key()] = it->get<double>();
    }
  }
  if (!(d.bandwidth_GBps > 0)) return fail("device class '" + name + "' has no positive bandwidth_GBps");
  return d;
}

Result<DeviceClass> load_device_class(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(path + ": cannot read the device classes file");
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = format::parse_json(ss.str(), path);
  if (!doc) return fail(to_string(doc.error()));
  auto d = device_class_from_json(*doc, name);
  if (!d) return fail(path + ": " + d.error().message);
  return d;
}

std::string default_device_classes_path() { return std::string(KZOO_SOURCE_DIR) + "/catalog/device_classes.json"; }

// ------------------------------------------------------------- helpers ---

namespace {

std::string fmt(double d) { return tolerance_number(d); }

// Parsed shape-entry expressions, keyed by their text.
class ExprCache {
 public:
  const tl::expected<WorkExpr, ExprError>& get(const std::string& text) {
    auto it = cache_.find(text);
    if (it == cache_.end()) it = cache_.emplace(text, WorkExpr::parse(text)).first;
    return it->second;
  }

 private:
  std::map<std::string, tl::expected<WorkExpr, ExprError>> cache_;
};

// The extents of `spec` at one binding, or nullopt if any entry fails.
std::optional<std::vector<long long>> extents(const TensorSpec& spec, const json& dims, ExprCache& cache) {
  std::vector<long long> out;
  for (const auto& e : spec.shape) {
    if (e.is_number_integer()) {
      if (e.get<long long>() < 0) return std::nullopt;
      out.push_back(e.get<long long>());
    } else if (e.is_string()) {
      const auto& x = cache.get(e.get<std::string>());
      if (!x) return std::nullopt;
      auto v = x->evaluate_extent(dims);
      if (!v) return std::nullopt;
      out.push_back(*v);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

double numel(const std::vector<long long>& ext) {
  double n = 1;
  for (long long e : ext) n *= static_cast<double>(e);
  return n;
}

bool is_python_identifier(const std::string& s) {
  static const std::set<std::string> kKeywords = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
      "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
      "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};
  if (s.empty() || kKeywords.count(s)) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// True if `source` has a line starting (after indentation) with "def NAME(".
bool defines_function(const std::string& source, const std::string& name) {
  const std::string want = "def " + name + "(";
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, want.size(), want) == 0) return true;
  }
  return false;
}

std::string shape_text(const json& shape) { return shape.dump(); }

struct ShapeRef {
  const Workload* workload;
  const char* list;  // "graded" | "correctness" | "measure"
  std::size_t index;
  const json* shape;
  std::string pointer() const { return workload->pointer + "/" + list + "/" + std::to_string(index); }
};

std::vector<ShapeRef> all_shapes(const Workload& w) {
  std::vector<ShapeRef> out;
  for (std::size_t i = 0; i < w.graded.size(); ++i) out.push_back({&w, "graded", i, &w.graded[i]});
  for (std::size_t i = 0; i < w.correctness.size(); ++i) out.push_back({&w, "correctness", i, &w.correctness[i]});
  for (std::size_t i = 0; i < w.measure.size(); ++i) out.push_back({&w, "measure", i, &w.measure[i]});
  return out;
}

class Linter {
 public:
  Linter(const Task& t, const LintOptions& o) : t_(t), o_(o) {}

  Violations run() {
    interface();
    workloads();
    tensor_shapes();
    work();
    tolerance();
    quantised();
    libraries();
    difficulty();
    return std::move(out_);
  }

 private:
  void add(std::string pointer, std::string rule, std::string detail) {
    out_.push_back({t_.file, std::move(pointer), "task." + std::move(rule), std::move(detail)});
  }

  // ---- the graded interface
  void interface() {
    if (!is_python_identifier(t_.entry_point)) {
      add("/definition/entry_point", "entry-point",
          "entry_point \"" + t_.entry_point + "\" is not a Python identifier; name the function the judge imports, "
          "e.g. \"softmax\"");
    }
    const bool module_ok = t_.module.size() > 3 && t_.module.ends_with(".py") &&
                           is_python_identifier(t_.module.substr(0, t_.module.size() - 3));
    if (!module_ok) {
      add("/definition/module", "module",
          t_.module.empty() ? std::string("definition.module is missing; give the file the agent edits, e.g. \"") +
                                  (is_python_identifier(t_.entry_point) ? t_.entry_point : "kernel") + ".py\""
                            : "module \"" + t_.module + "\" must be a plain importable file name ending in .py "
                              "(no directories), e.g. \"softmax.py\"");
    }
    if (is_python_identifier(t_.entry_point) && !defines_function(t_.reference_source, t_.entry_point)) {
      add("/definition/reference/source", "reference-entry-point",
          "the reference source does not define `def " + t_.entry_point + "(`; the judge calls the reference by the "
          "task's entry_point, so define it at the start of a line");
    }
    std::set<std::string> seen;
    for (const auto* list : {&t_.inputs, &t_.outputs}) {
      for (const auto& s : *list) {
        if (!is_python_identifier(s.name)) {
          add(s.pointer + "/name", "tensor-name",
              "tensor name \"" + s.name + "\" is not a Python identifier; the judge passes inputs by position and "
              "names them in messages and in-place lists, so use e.g. \"x\"");
        }
      }
    }
    for (const auto& s : t_.inputs) {
      if (!seen.insert(s.name).second) {
        add(s.pointer + "/name", "tensor-name", "input name \"" + s.name + "\" is used twice; rename one");
      }
    }
    if (t_.outputs.empty()) add("/definition/outputs", "outputs", "the task has no outputs; list what the entry point returns");
    for (std::size_t i = 0; i < t_.in_place_outputs.size(); ++i) {
      const auto& n = t_.in_place_outputs[i];
      if (!t_.input(n)) {
        add("/definition/in_place_outputs/" + std::to_string(i), "in-place",
            "in_place_outputs names \"" + n + "\", which is not an input; list inputs the entry point mutates");
      }
    }
    // An output named like an in-place input is that input after the call: the
    // judge reads it from the mutated tensor, so it must describe the same tensor.
    for (const auto& out : t_.outputs) {
      const TensorSpec* in = t_.input(out.name);
      if (!in) continue;
      const bool listed = std::find(t_.in_place_outputs.begin(), t_.in_place_outputs.end(), out.name) !=
                          t_.in_place_outputs.end();
      if (!listed) {
        add(out.pointer + "/name", "in-place",
            "output \"" + out.name + "\" has the name of an input; if the entry point updates that input in place, "
            "list it in in_place_outputs, otherwise rename the output");
      } else if (out.dtype != in->dtype || json(out.shape) != json(in->shape)) {
        add(out.pointer, "in-place",
            "in-place output \"" + out.name + "\" is " + out.dtype + " " + json(out.shape).dump() + " but the input is " +
                in->dtype + " " + json(in->shape).dump() + "; an in-place output is the input itself, so they must match");
      }
    }
    if (!t_.read_only_inputs && t_.in_place_outputs.empty()) {
      add("/definition/read_only_inputs", "read-only",
          "read_only_inputs is false but in_place_outputs is empty; the judge compares every input with a pristine "
          "copy, so name the inputs that may change in in_place_outputs, or set read_only_inputs true");
    }
    if (t_.read_only_inputs && !t_.in_place_outputs.empty()) {
      add("/definition/read_only_inputs", "read-only",
          "in_place_outputs lists inputs that change, but read_only_inputs is true (the default); set "
          "\"read_only_inputs\": false");
    }
  }

  // ---- workloads: dims and shape tuples
  void workloads() {
    for (const auto& w : t_.workloads) {
      std::set<std::string> seen;
      for (std::size_t i = 0; i < w.dims.size(); ++i) {
        if (!seen.insert(w.dims[i]).second) {
          add(w.pointer + "/dims/" + std::to_string(i), "dims", "dim \"" + w.dims[i] + "\" is listed twice");
        }
      }
      if (w.graded.empty()) {
        add(w.pointer + "/graded", "graded-empty", "workload \"" + w.name + "\" has no graded shapes; add at least one");
      }
      if (w.correctness.empty()) {
        add(w.pointer + "/correctness", "correctness-empty",
            "workload \"" + w.name + "\" has no correctness shapes; add small ones, including ragged sizes");
      }
      for (const auto& s : all_shapes(w)) {
        if (!s.shape->is_array() || s.shape->size() != w.dims.size()) {
          add(s.pointer(), "shape-arity",
              "shape " + shape_text(*s.shape) + " has " + std::to_string(s.shape->size()) + " values but workload \"" +
                  w.name + "\" has " + std::to_string(w.dims.size()) + " dims (" + join(w.dims) +
                  "); give one value per dim, in that order");
        }
      }
    }
  }

  static std::string join(const std::vector<std::string>& xs) {
    std::string out;
    for (const auto& x : xs) out += (out.empty() ? "" : ", ") + x;
    return out.empty() ? "none" : out;
  }

  std::vector<std::string> unknown_dims(const WorkExpr& e, const Workload& w) const {
    std::vector<std::string> out;
    for (const auto& n : e.names()) {
      if (std::find(w.dims.begin(), w.dims.end(), n) == w.dims.end()) out.push_back(n);
    }
    return out;
  }

  // ---- symbolic tensor shapes
  void tensor_shapes() {
    for (const auto* list : {&t_.inputs, &t_.outputs}) {
      for (const auto& spec : *list) {
        for (std::size_t k = 0; k < spec.shape.size(); ++k) entry(spec, k);
      }
    }
  }

  void entry(const TensorSpec& spec, std::size_t k) {
    const json& e = spec.shape[k];
    const std::string ptr = spec.pointer + "/shape/" + std::to_string(k);
    if (e.is_number_integer()) {
      if (e.get<long long>() < 0) add(ptr, "shape-value", "extent " + e.dump() + " of \"" + spec.name + "\" is negative");
      return;
    }
    if (!e.is_string()) return;  // the schema reports other types
    const auto& x = cache_.get(e.get<std::string>());
    if (!x) {
      add(ptr, "shape-expr", "shape entry of \"" + spec.name + "\": " + x.error().message() +
                                 "; see the expression grammar in docs/ARCHITECTURE.md");
      return;
    }
    for (const auto& w : t_.workloads) {
      auto unknown = unknown_dims(*x, w);
      if (!unknown.empty()) {
        add(ptr, "shape-dim", "shape entry \"" + x->text() + "\" of \"" + spec.name + "\" uses " + join(unknown) +
                                  ", not a dim of workload \"" + w.name + "\" (dims are " + join(w.dims) +
                                  "); add it to the workload's dims or fix the name");
        continue;
      }
      for (const auto& s : all_shapes(w)) {
        if (!s.shape->is_array() || s.shape->size() != w.dims.size()) continue;
        auto v = x->evaluate_extent(w.bind(*s.shape));
        if (!v) {
          add(ptr, "shape-value", "shape entry of \"" + spec.name + "\" at " + s.list + " shape " +
                                      shape_text(*s.shape) + " of workload \"" + w.name + "\": " + v.error().message());
          break;  // one report per entry and workload is enough to act on
        }
      }
    }
  }

  // ---- canonical_work and the roofline
  void work() {
    const std::string ptr = "/grading/reward/canonical_work";
    if (t_.canonical_work.empty()) {
      add(ptr, "work-missing",
          "grading.reward.canonical_work is missing; the reward is work / time, so give the work as an expression "
          "over the dims, e.g. \"2*M*N*K\" (FLOP) or \"2*R*C*2\" (bytes)");
      return;
    }
    auto x = WorkExpr::parse(t_.canonical_work);
    if (!x) {
      add(ptr, "work-expr", "canonical_work " + x.error().message() + "; see the grammar in docs/ARCHITECTURE.md");
      return;
    }
    for (const auto& w : t_.workloads) {
      auto unknown = unknown_dims(*x, w);
      if (!unknown.empty()) {
        add(ptr, "work-dim", "canonical_work \"" + x->text() + "\" uses " + join(unknown) + ", not a dim of workload \"" +
                                 w.name + "\" (dims are " + join(w.dims) + "); work comes from the shape alone");
        continue;
      }
      bool work_ok = true;
      for (const auto& s : all_shapes(w)) {
        if (!s.shape->is_array() || s.shape->size() != w.dims.size()) continue;
        auto v = x->evaluate_work(w.bind(*s.shape));
        if (!v) {
          add(ptr, "work-value", "canonical_work at " + std::string(s.list) + " shape " + shape_text(*s.shape) +
                                     " of workload \"" + w.name + "\": " + v.error().message());
          work_ok = false;
          break;
        }
      }
      if (work_ok) roofline(*x, w);
    }
  }

  void roofline(const WorkExpr& x, const Workload& w) {
    double largest = -1;
    for (std::size_t i = 0; i < w.graded.size(); ++i) {
      const json& shape = w.graded[i];
      if (!shape.is_array() || shape.size() != w.dims.size()) continue;
      auto r = roofline_us(t_, x, w.bind(shape), o_.device);
      const std::string ptr = w.pointer + "/graded/" + std::to_string(i);
      if (!r) {
        add(ptr, "roofline", r.error().message);
        continue;
      }
      if (!r->has_value()) return;  // a metric without a peak rate: nothing to check
      const double us = **r;
      largest = std::max(largest, us);
      if (us < o_.min_roofline_us) {
        add(ptr, "roofline",
            "graded shape " + shape_text(shape) + " has a roofline of " + fmt(us) + " us on " + o_.device.name +
                " (needs >= " + fmt(o_.min_roofline_us) + " us so the kernel, not launch overhead, dominates); "
                "scale it up by about " + fmt(std::ceil(o_.min_roofline_us / std::max(us, 1e-9) * 10) / 10) + "x");
      }
    }
    if (w.roofline_us && largest > 0) {
      const double stated = *w.roofline_us;
      if (std::fabs(stated - largest) > o_.roofline_match * largest) {
        add(w.pointer + "/roofline_us", "roofline-us",
            "roofline_us is " + fmt(stated) + " but the largest graded shape needs " + fmt(largest) + " us on " +
                o_.device.name + " (work / peak); write " + fmt(std::round(largest * 10) / 10));
      }
    }
  }

  // ---- tolerance calibration
  void tolerance() {
    const Tolerance& tol = t_.tolerance;
    const std::string ptr = "/grading/tolerance";
    if (tol.comparator == "rowwise" && !(tol.row_pass && *tol.row_pass > 0 && *tol.row_pass <= 1)) {
      add(ptr + "/row_pass", "row-pass",
          std::string("the rowwise comparator needs row_pass, the fraction of rows that must pass, in (0, 1]; got ") +
              (tol.row_pass ? fmt(*tol.row_pass) : "none"));
    }
    elementwise_atol(ptr);
    if (tol.comparator == "exact") return;  // exact equality: E and D do not bound a threshold
    if (!tol.measured_floor_E || !tol.measured_drop_D) {
      add(ptr, "uncalibrated",
          std::string("measured_floor_E and measured_drop_D are required (missing: ") +
              (!tol.measured_floor_E ? "measured_floor_E" : "") +
              (!tol.measured_floor_E && !tol.measured_drop_D ? ", " : "") + (!tol.measured_drop_D ? "measured_drop_D" : "") +
              "); run `kzoo task calibrate TASK_DIR --write`");
      return;
    }
    for (auto& f : check_tolerance(tol.value, *tol.measured_floor_E, *tol.measured_drop_D, o_.tolerance))
      add(ptr + "/value", f.rule, f.detail);
  }

  // A task's own elementwise atol (instead of the board's 1e-2) says why, in the task: the rules
  // allow one only where calibration proves 1e-2 impossible (scaffold.cpp writes the why into
  // the package's benchmark.py).
  void elementwise_atol(const std::string& ptr) {
    const json& doc = t_.doc;
    if (!doc.contains("grading") || !doc["grading"].is_object() || !doc["grading"].contains("tolerance")) return;
    const json& tol = doc["grading"]["tolerance"];
    if (!tol.is_object() || !tol.contains("elementwise_atol")) return;
    if (!tol["elementwise_atol"].is_number() || tol["elementwise_atol"].get<double>() <= 0)
      add(ptr + "/elementwise_atol", "elementwise-atol",
          "elementwise_atol must be a positive number (the per-element absolute bound the judge holds every "
          "output to, instead of the board's 1e-2); got " + tol["elementwise_atol"].dump());
    const json why = tol.value("elementwise_atol_why", json());
    if (!why.is_string() || why.get<std::string>().size() < 20)
      add(ptr + "/elementwise_atol_why", "elementwise-atol-why",
          "a task that sets elementwise_atol says why the board's atol 1e-2 is impossible for it in "
          "elementwise_atol_why (what calibration measured, at which shape); add it or drop elementwise_atol");
  }

  // ---- T4 asserts near-unbeatability: the schema says that set is hand-reviewed, not left to a heuristic
  void difficulty() {
    const json* d = t_.doc.contains("difficulty") ? &t_.doc["difficulty"] : nullptr;
    if (!d || !d->is_object() || d->value("tier", json()) != json("T4")) return;
    if (d->value("reviewed_by_hand", json()) != json(true))
      add("/difficulty/reviewed_by_hand", "reviewed-by-hand",
          "tier T4 claims the kernel is already at the hardware limit, a claim a person checks: set "
          "difficulty.reviewed_by_hand to true once a maintainer has reviewed it, or choose a lower tier");
  }

  // ---- the library gate's opt-ins (docs/JUDGE.md, "The library gate")
  void libraries() {
    // The judge's families (judge/kzoo_judge/gates.py FAMILIES; the schema's enum lists the same).
    static const std::set<std::string> known = {"cublas",     "cudnn",      "cutlass", "attention",
                                                "torch-softmax", "torch-norm", "torch-loss", "nccl",
                                                "cufft",      "cusparse",   "cub"};
    const json* g = t_.doc.contains("grading") ? &t_.doc["grading"] : nullptr;
    if (!g || !g->is_object() || !g->contains("allowed_libraries")) return;
    const json& a = (*g)["allowed_libraries"];
    const std::string ptr = "/grading/allowed_libraries";
    if (!a.is_array()) {
      add(ptr, "allowed-libraries", "allowed_libraries must be a list of library family ids, e.g. [\"cublas\"]");
      return;
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string at = ptr + "/" + std::to_string(i);
      if (!a[i].is_string() || !known.count(a[i].get<std::string>())) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        add(at, "allowed-libraries", "unknown library family " + a[i].dump() + "; use one of: " + list);
        continue;
      }
      if (!seen.insert(a[i].get<std::string>()).second)
        add(at, "allowed-libraries", "library family \"" + a[i].get<std::string>() + "\" is listed twice; remove one");
    }
    if (!a.empty() && !(t_.doc.contains("difficulty") && t_.doc["difficulty"].is_object() &&
                        t_.doc["difficulty"].contains("rationale")))
      add(ptr, "allowed-libraries-rationale",
          "a task that lets submissions call a library its reference does not must say why in difficulty.rationale "
          "(what is left to write when the library does the heavy lifting)");
  }

  // ---- quantised inputs
  void quantised() {
    for (const auto& spec : t_.inputs) {
      if (!spec.quantized) continue;
      const json& q = *spec.quantized;
      const std::string qptr = spec.pointer + "/quantized";
      const std::string scale_name = spec.name + "_scale";
      const TensorSpec* scale = t_.input(scale_name);
      if (!scale || scale->dtype != "float32") {
        add(qptr, "quant-scale",
            "quantised input \"" + spec.name + "\" needs a float32 input named \"" + scale_name + "\" holding its " +
                "scales" + (scale ? " (it is " + scale->dtype + ")" : "") +
                "; the reference must dequantise exactly the bytes and scales the judge generates");
        continue;
      }
      const std::string gran = q.contains("scale_granularity") && q["scale_granularity"].is_string()
                                   ? q["scale_granularity"].get<std::string>()
                                   : "";
      if (gran.empty()) {
        add(qptr, "quant-granularity",
            "quantised input \"" + spec.name + "\" needs scale_granularity (per-tensor, per-row, per-block or "
            "per-channel) so the judge knows how to generate \"" + scale_name + "\"");
      } else if (gran == "per-tensor") {
        const bool ok = scale->shape.empty() || (scale->shape.size() == 1 && scale->shape[0] == json(1));
        if (!ok) {
          add(scale->pointer + "/shape", "quant-scale-shape",
              "per-tensor scale \"" + scale_name + "\" must have shape [] or [1], not " + json(scale->shape).dump() +
                  " (the judge generates one exact power-of-two scale, so its rounding cannot bias the output)");
        }
      } else if (gran == "per-block") {
        block(spec, *scale, q, qptr);
      }
    }
  }

  void block(const TensorSpec& data, const TensorSpec& scale, const json& q, const std::string& qptr) {
    const long long b = q.contains("block_size") && q["block_size"].is_number_integer() ? q["block_size"].get<long long>() : 0;
    if (b <= 0) {
      add(qptr + "/block_size", "quant-block-size",
          "per-block quantised input \"" + data.name + "\" needs a positive integer block_size");
      return;
    }
    if (scale.shape.size() != data.shape.size()) {
      add(scale.pointer + "/shape", "quant-scale-shape",
          "block scale \"" + scale.name + "\" has rank " + std::to_string(scale.shape.size()) + " but \"" + data.name +
              "\" has rank " + std::to_string(data.shape.size()) + "; give one scale extent per data axis");
      return;
    }
    for (const auto& w : t_.workloads) {
      for (const auto& s : all_shapes(w)) {
        if (!s.shape->is_array() || s.shape->size() != w.dims.size()) continue;
        json dims = w.bind(*s.shape);
        auto de = extents(data, dims, cache_);
        auto se = extents(scale, dims, cache_);
        if (!de || !se) continue;  // reported by the shape rules
        for (std::size_t i = 0; i < de->size(); ++i) {
          const long long n = (*de)[i], blocks = (n + b - 1) / b;
          if ((*se)[i] != n && (*se)[i] != blocks) {
            add(scale.pointer + "/shape/" + std::to_string(i), "quant-scale-shape",
                "at " + std::string(s.list) + " shape " + shape_text(*s.shape) + " of workload \"" + w.name +
                    "\", axis " + std::to_string(i) + " of \"" + scale.name + "\" is " + std::to_string((*se)[i]) +
                    " but \"" + data.name + "\" has " + std::to_string(n) + " there: a block scale axis is either " +
                    std::to_string(n) + " (not blocked) or cdiv(" + std::to_string(n) + ", " + std::to_string(b) +
                    ") = " + std::to_string(blocks) + "; write the extent with cdiv() so ragged sizes keep their tail");
            return;
          }
        }
      }
    }
  }

  const Task& t_;
  const LintOptions& o_;
  ExprCache cache_;
  Violations out_;
};

}  // namespace

// -------------------------------------------------------------- public ---

std::string dominant_input_dtype(const Task& task, const json& dims) {
  ExprCache cache;
  std::map<std::string, double> by_dtype;
  for (const auto& in : task.inputs) {
    if (auto e = extents(in, dims, cache)) by_dtype[in.dtype] += numel(*e);
  }
  std::string best;
  double most = -1;
  for (const auto& [dtype, n] : by_dtype) {
    if (n > most) {
      most = n;
      best = dtype;
    }
  }
  return best;
}

Result<std::optional<double>> roofline_us(const Task& task, const WorkExpr& work, const json& dims,
                                          const DeviceClass& device) {
  auto w = work.evaluate_work(dims);
  if (!w) return fail("canonical_work " + w.error().message());
  if (task.metric == "GB/s") return std::optional<double>(*w / (device.bandwidth_GBps * 1e9) * 1e6);
  if (task.metric == "TFLOP/s") {
    const std::string dtype = dominant_input_dtype(task, dims);
    auto it = device.tflops.find(dtype);
    if (it == device.tflops.end() || !(it->second > 0)) {
      return fail("device class " + device.name + " has no TFLOP/s rate for the inputs' dominant dtype \"" + dtype +
                  "\"; add one to device_classes.json");
    }
    return std::optional<double>(*w / (it->second * 1e12) * 1e6);
  }
  return std::optional<double>();
}

Violations lint_task(const Task& task, const LintOptions& options) { return Linter(task, options).run(); }

Violations lint_task_file(const std::string& path, const LintOptions& options) {
  auto t = load_task(path);
  if (!t) return t.error();
  return lint_task(*t, options);
}

}  // namespace kzoo::task
