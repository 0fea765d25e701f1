// weft::load stats_json: a run's Stats as JSON that restores exactly (the "raw" member of a
// JSON report), so that the reports of a fleet's instances merge (merge.hpp) into the report
// one process would have made: every count, every histogram bucket and the running moments,
// the per-second timeline. Doubles are written in their shortest round-trip form.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "loadgen/stats.hpp"

namespace weft::load {

/// Returns `s` as a JSON object that stats_from_json restores exactly.
nlohmann::json stats_to_json(const Stats& s);

/// Restores Stats from `j` (stats_to_json's form); returns nullopt and sets `error` to the
/// member at fault when `j` is not such an object.
std::optional<Stats> stats_from_json(const nlohmann::json& j, std::string& error);

}  // namespace weft::load
