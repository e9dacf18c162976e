// Case folding for the names people type (catalog ids, enum spellings, the free text of a
// measured run): ASCII only and independent of the C locale, so "H100" and "h100" are one name
// on every machine and no byte beyond ASCII changes. And dollars as tables print them.
#pragma once

#include <string>
#include <string_view>

namespace simrun {

// `text` with A-Z as a-z; every other byte as written.
std::string ascii_lower(std::string_view text);

// ascii_lower(text) without '_' and '-': the one key of "all_reduce", "AllReduce" and
// "all-reduce".
std::string spelling_key(std::string_view text);

// Dollars at the scale that reads best, `digits` significant from $1k, to the cent below:
// "$55.07", "$68.6k", "$1.23M", "$4.5B", "$1.2T", "-$2.5k"; "-" for no finite sum (a fine-tuning
// run and a pre-training run in one table, neither "$0.00M").
std::string usd_text(double usd, int digits = 3);
// Energy likewise: "366 Wh" never, "0.366 kWh", "237 MWh", "21000 MWh".
std::string energy_text(double kwh);

}  // namespace simrun
