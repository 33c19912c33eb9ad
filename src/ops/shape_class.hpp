// Shape classes of the tuning cache: sizes rounded up to powers of two, written as words
// ("NN m2048 n2048 k512"), and the nearest tuned class to an untuned one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/tuning_store.hpp"

namespace hal::ops {

// The smallest power of two >= value (1 for 0).
uint64_t class_size(uint64_t value);

// How far apart two classes are: the sum over their words of |log2 a - log2 b| for sizes with
// the same letters, and 4 for each word that differs otherwise.
double class_distance(const std::string& a, const std::string& b);

// The entry of `op` and `dtype` in `table` whose class is `shape_class`, else the nearest one;
// null when the table has none of that op and dtype.
const TuneEntry* nearest_entry(const TuningTable& table, const std::string& op,
                               const std::string& dtype, const std::string& shape_class);

// The same for a table of the store (tuning_table), remembered per thread for the latest 16
// questions (with the tables they were asked of): ops ask on every call, and the search reads
// every entry's class. Null at once for an empty table. The entry lives as long as `table`.
const TuneEntry* nearest_entry(const std::shared_ptr<const TuningTable>& table,
                               const std::string& op, const std::string& dtype,
                               const std::string& shape_class);

}  // namespace hal::ops
