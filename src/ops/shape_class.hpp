// Shape classes of the tuning cache: sizes rounded up to powers of two, written as words
// ("NN m2048 n2048 k512"), and the nearest tuned class to an untuned one.
#pragma once

#include <array>
#include <cstddef>
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

// An answer about a table of the store (tuning_table) to `question`, made by `answer()` once
// and then remembered per thread for the latest kSlots questions, each with its table held, so
// that a table the store has replaced is asked again, never mistaken for a new one at the same
// address. Ops ask on every call, and answering reads every entry's class.
template <class Answer, size_t kSlots = 8, class Make>
Answer remembered(const std::shared_ptr<const TuningTable>& table, const std::string& question,
                  Make&& answer) {
  struct Slot {
    std::shared_ptr<const TuningTable> table;
    std::string question;
    Answer answer{};
  };
  thread_local std::array<Slot, kSlots> slots;
  thread_local size_t next = 0;
  for (const Slot& slot : slots)
    if (slot.table == table && slot.question == question) return slot.answer;
  Slot& slot = slots[next];
  next = (next + 1) % kSlots;
  slot = {table, question, answer()};
  return slot.answer;
}

}  // namespace hal::ops
