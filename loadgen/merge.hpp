// weft::load merge: one report from the JSON reports of a fleet's instances (--client I/N),
// exact: counts and error classes add, histograms add bucket by bucket (so the merged
// percentiles are those one process that saw every call would report), timelines add second
// by second (the instances started together: --start-at), CPU times add, and the figures are
// then derived from the merged Stats by the same code as a single run's (report.hpp).
//
// Refused, with the file named: a file that is not a weft-load JSON report, a report without
// the "raw" figures (written by a weft-load before merging existed), a --sweep report (an
// array: merge each rate's reports), reports of different tests (their "test" differs), of
// different weft-load versions, or of the same instance twice. Reports may themselves be
// merged ones, as long as their instances do not overlap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loadgen/report.hpp"
#include "loadgen/stats.hpp"

namespace weft::load {

/// One report to merge: where it came from (for errors) and its JSON text.
struct MergeInput {
  std::string name;
  std::string text;
};

/// The merged figures and the context to report them with.
struct MergedReport {
  Stats stats;
  ReportContext context;
};

/// Merges `inputs` (at least one); returns nullopt and sets `error` to a one-line reason
/// naming the file at fault when they cannot be merged.
std::optional<MergedReport> merge_reports(const std::vector<MergeInput>& inputs,
                                          std::string& error);

/// What `weft-load merge` was asked: the reports, and where to write the merged JSON.
struct MergeOptions {
  std::vector<std::string> files;
  std::string json_file;  // --json; empty: none
  bool quiet = false;     // --quiet: no text report
};

/// Parses `weft-load merge [--json FILE] [--quiet] REPORT.json...` (main's argv: argv[1] is
/// "merge"); on
/// --help or a usage error returns nullopt with `exit_code` (0 or 2) and `output` set.
std::optional<MergeOptions> parse_merge_options(int argc, const char* const* argv, int& exit_code,
                                                std::string& output);

}  // namespace weft::load
