// Tables of numbers: delimiter-separated, Markdown/RST/box-drawn pipe
// tables, column-aligned printouts, and columns of bare numbers.
#include "kzoo/package/evidence_lines.hpp"
#include "kzoo/package/evidence_text.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace kzoo::package::evidence_detail {

namespace {

bool is_md_separator(const std::vector<sv>& cells) {
  for (sv c : cells) {
    sv t = trim(c);
    if (t.empty() || !std::all_of(t.begin(), t.end(), [](char ch) { return ch == '-' || ch == ':'; })) return false;
  }
  return true;
}

struct TableRun {
  std::size_t start = 0, cells = 0, data = 0, fractional = 0;
  bool markdown = false, active = false;
};

// Whether a run is under measurement headers: some line of its header (the
// line before it, and header-like rows before its first data row) has a
// measurement word. Only a run with data rows can be flagged, so the lines
// are kept and looked at then, not on every line that might start a run.
class PerfHeader {
 public:
  void reset(sv header) {
    lines_.clear();
    add(header);
  }
  void add(sv line) {
    if (!line.empty()) lines_.push_back(line);
  }
  bool any() const { return std::any_of(lines_.begin(), lines_.end(), has_perf_keyword); }

 private:
  std::vector<sv> lines_;
};

// The lines a table detector reads: in code, without comment markers (a
// table pasted into a comment counts); in prose, trimmed.
const std::vector<sv>& table_lines(const TextLines& text, TextKind kind) {
  return kind == TextKind::Code ? text.stripped : text.trimmed;
}

// The whitespace-separated cells of one line, as find_aligned_table counts
// them: how many, how many are numbers, and how many numbers lead the row.
struct AlignedRow {
  std::size_t cells = 0, numeric = 0, lead = 0;
  // At least three numbers making up most of the row.
  bool is_data() const { return numeric >= 3 && (lead >= 3 || numeric * 10 >= cells * 6); }
};

AlignedRow count_aligned_row(sv t, bool three_numbers_possible) {
  AlignedRow r;
  // Fewer than three numbers cannot make a data row; how many cells there
  // are does not matter then.
  if (!three_numbers_possible) return r;
  for_each_word(t, [&](sv cell) {
    const bool number = is_numeric_cell(cell);
    if (number) ++r.numeric;
    if (number && r.lead == r.cells) ++r.lead;
    ++r.cells;
    return true;
  });
  return r;
}

// Column-aligned output (pandas, profilers, pytest-benchmark, hand-pasted
// results): whitespace-separated rows with at least three number tokens
// making up most of the row. Rows are grouped by their count of numbers, so
// a label column or a free-text name ("void at::native::...") does not matter.
std::optional<Finding> find_aligned_table(const TextLines& text, const std::vector<sv>& lines, TextKind kind) {
  std::size_t sig_of_run = 0, rows = 0, start = 0;
  bool perf = false;
  sv header;
  auto verdict = [&]() -> std::optional<Finding> {
    // Code comments document small numeric tables (ranges, encodings): a
    // longer run is needed there unless the headers say "measured".
    if ((perf && rows >= 2) || rows >= (kind == TextKind::Code ? 8u : 5u)) {
      return Finding{"evidence.table", line_ptr(start),
                     "holds a column-aligned table with " + std::to_string(rows) + " rows of numbers" +
                         (perf ? " under measurement headers (time/latency/throughput...)" : "") +
                         ": results and statistics are not package content"};
    }
    return std::nullopt;
  };
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const sv t = lines[n];
    if (is_rule_line(t)) continue;
    const AlignedRow row = count_aligned_row(t, text.may_hold_numbers(n, 3));
    const bool data = row.is_data();
    if (data && row.numeric == sig_of_run) {
      ++rows;
      continue;
    }
    if (auto f = verdict()) return f;
    if (data) {
      sig_of_run = row.numeric, rows = 1, start = n;
      perf = has_perf_keyword(header);
    } else {
      sig_of_run = 0, rows = 0;
      header = t;
    }
  }
  return verdict();
}

// A line whose every whitespace-separated cell is a number (a trailing ','
// or ';' allowed).
bool is_number_row(sv t) {
  bool any = false;
  const bool all = for_each_word(t, [&](sv c) {
    any = true;
    while (!c.empty() && (c.back() == ',' || c.back() == ';')) c.remove_suffix(1);
    return is_numeric_cell(c);
  });
  return any && all;
}

// A column of bare numbers (np.savetxt of a 1-D array, a pasted list of
// timings) in a prose file: no authored document is mostly numbers.
std::optional<Finding> find_number_column(const std::vector<sv>& lines) {
  std::size_t nonblank = 0, numbers = 0, first = 0;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const sv t = lines[n];
    if (t.empty()) continue;
    ++nonblank;
    if (is_number_row(t) && numbers++ == 0) first = n;
  }
  if (numbers >= 20 && numbers * 2 >= nonblank) {
    return Finding{"evidence.table", line_ptr(first),
                   std::to_string(numbers) + " of its " + std::to_string(nonblank) +
                       " lines are bare numbers: a data dump, not a document"};
  }
  return std::nullopt;
}

// Whether unbox() would change `text`: the box-drawing block U+2500..U+257F
// is E2 94 xx / E2 95 xx in UTF-8.
bool has_box_drawing(sv text) {
  for (std::size_t i = text.find('\xe2'); i != sv::npos; i = text.find('\xe2', i + 1)) {
    if (i + 2 < text.size() && (static_cast<unsigned char>(text[i + 1]) == 0x94 ||
                                static_cast<unsigned char>(text[i + 1]) == 0x95))
      return true;
  }
  return false;
}

// Box-drawing tables (rich, tabulate "fancy_grid") read as pipe tables:
// vertical strokes become '|', the rest '-'.
std::string unbox(sv text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned char b = static_cast<unsigned char>(text[i]);
    if (b == 0xe2 && i + 2 < text.size() && (static_cast<unsigned char>(text[i + 1]) == 0x94 ||
                                             static_cast<unsigned char>(text[i + 1]) == 0x95)) {
      unsigned cp = 0x2000 | ((static_cast<unsigned char>(text[i + 1]) & 0x3f) << 6) |
                    (static_cast<unsigned char>(text[i + 2]) & 0x3f);
      bool vertical = cp == 0x2502 || cp == 0x2503 || cp == 0x2506 || cp == 0x2507 || cp == 0x250a ||
                      cp == 0x250b || cp == 0x2551;
      out += vertical ? '|' : '-';
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Delimiter-separated tables (',' '\t' ';' '|'), one delimiter per pass.
std::optional<Finding> find_separated_table(const std::vector<sv>& lines, TextKind kind, char d) {
  TableRun run;
  PerfHeader perf_header;
  sv header;
  std::optional<Finding> hit;
  std::vector<sv> cells;  // reused for every line
  auto start_run = [&](std::size_t n, std::size_t width, bool markdown) {
    run = TableRun{n, width, 0, 0, markdown, true};
    perf_header.reset(header);
  };
  auto close = [&]() {
    if (!run.active) return;
    // Every verdict needs a data row; only then are the headers read.
    const bool perf = run.data >= 1 && perf_header.any();
    // Pipe tables (Markdown, RST grids) are how authors document parameters:
    // they need measurement headers, or many fractional rows.
    bool flagged = (run.markdown || d == '|')
                       ? ((perf && run.data >= 1) || (run.data >= 8 && run.fractional * 2 >= run.data) ||
                          run.data >= 20)
                       : ((perf && run.data >= 2) || run.data >= 5 ||
                          (kind == TextKind::Prose && run.data >= 3 && run.fractional * 2 >= run.data));
    if (flagged && !hit) {
      std::string what = d == ',' ? "comma-separated" : d == '\t' ? "tab-separated" : d == ';' ? "semicolon-separated"
                         : d == '|' ? (run.markdown ? "Markdown" : "pipe-separated") : "column-aligned";
      hit = Finding{"evidence.table", line_ptr(run.start),
                    "holds a " + what + " table with " + std::to_string(run.data) + " rows of numbers" +
                        (perf ? " under measurement headers (time/latency/throughput...)" : "") +
                        ": results and statistics are not package content"};
    }
    run = TableRun{};
  };
  for (std::size_t n = 0; n < lines.size() && !hit; ++n) {
    const sv t = lines[n];
    const bool has_d = t.find(d) != sv::npos;
    if (d == '|' && has_d) {
      split_cells(t, '|', cells);
      if (is_md_separator(cells)) {
        if (!run.active) start_run(n, cells.size(), false);
        run.markdown = true;
        continue;
      }
    }
    if (!t.empty() && is_rule_line(t)) continue;  // +=====+=====+ between header and rows
    if (t.empty() || !has_d) {
      close();
      header = {};
      continue;
    }
    // In code, "1, 2, 3," is an array initialiser, not a CSV row.
    if (kind == TextKind::Code && d == ',' && t.back() == ',') {
      close();
      continue;
    }
    if (d != '|') split_cells(t, d, cells);  // the pipe cells are split above
    if (cells.size() < 2) {
      close();
      header = t;
      continue;
    }
    std::size_t numeric = 0, nonempty = 0;
    bool frac = false;
    for (sv c : cells) {
      sv ct = trim(c);
      if (ct.empty() || ct == "-" || ct == "n/a" || ct == "N/A") continue;
      ++nonempty;
      if (is_numeric_cell(ct)) {
        ++numeric;
        frac |= ct.find('.') != sv::npos;
      }
    }
    // In code, separators also align "#define X\t0x01" and argument lists:
    // only rows made of numbers alone count there.
    bool data_row = kind == TextKind::Code ? (numeric >= 2 && numeric == nonempty)
                                           : (numeric >= 1 && numeric * 2 >= nonempty);
    bool same_shape = run.active && cells.size() == run.cells;
    if (!same_shape) {
      close();
      if (!data_row) {
        header = t;
        start_run(n, cells.size(), false);
        continue;
      }
      start_run(n, cells.size(), false);
      header = {};
    }
    run.cells = cells.size();
    if (data_row) {
      ++run.data;
      if (frac) ++run.fractional;
    } else if (run.data == 0) {
      perf_header.add(t);
    } else {
      close();
    }
  }
  close();
  return hit;
}

std::optional<Finding> find_table_in(const TextLines& text, TextKind kind) {
  const std::vector<sv>& lines = table_lines(text, kind);
  if (auto f = find_aligned_table(text, lines, kind)) return f;
  if (kind == TextKind::Prose) {
    if (auto f = find_number_column(lines)) return f;
  }
  for (char d : {',', '\t', ';', '|'}) {
    // A delimiter absent from the whole text cannot start a run.
    if (text.text.find(d) == sv::npos) continue;
    if (auto f = find_separated_table(lines, kind, d)) return f;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Finding> find_table(const TextLines& text, TextKind kind) {
  // Box-drawn tables are read as pipe tables; most files have none, and
  // then the shared lines serve as they are.
  if (!has_box_drawing(text.text)) return find_table_in(text, kind);
  const std::string unboxed = unbox(text.text);
  return find_table_in(split_text(unboxed), kind);
}

}  // namespace kzoo::package::evidence_detail
