// TfIdfVectorizer (opset 9): counts of the pool's n-grams in each row of int32, int64 or string
// items, with skips, weighted as TF, IDF or TFIDF. Counted on the host, as ONNX's reference
// and ONNX Runtime count (a trie of the pool walked from every start, every skip distance),
// the f32 result made on the node's stream.
#include <algorithm>
#include <map>

#include "core/checked_math.hpp"
#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Values = std::vector<Value>;

// The pool's n-grams as a trie: a path of items from the root ends at an n-gram's node, whose
// id (from 1, in pool order) says which; prefixes that are no n-gram of their own have id 0.
template <class Item>
class NgramTrie {
 public:
  void add(const std::vector<Item>& items, size_t id) {
    size_t at = 0;
    for (const Item& item : items) {
      auto [child, added] = nodes_[at].children.try_emplace(item, nodes_.size());
      if (added) nodes_.emplace_back();
      at = child->second;
    }
    nodes_[at].id = id;
  }
  bool empty() const { return nodes_[0].children.empty(); }

  // Calls `found(id)` for each n-gram of `min_n` to `max_n` items of `row` with `skip` items
  // between neighbours, for skips 0 to `max_skip`; 1-grams once, not once per skip.
  template <class Found>
  void count(const std::vector<Item>& row, int64_t min_n, int64_t max_n, int64_t max_skip,
             Found found) const {
    const auto end = static_cast<int64_t>(row.size());
    int64_t start_n = min_n;
    // A skip that leaves no room for a second item matches nothing more than 1-grams, which
    // the first distance counted: the distances stop at the row's length, whatever max_skip.
    const int64_t last_distance = max_skip < end ? max_skip + 1 : std::max<int64_t>(end, 1);
    for (int64_t distance = 1; distance <= last_distance; ++distance) {
      for (int64_t start = 0; start < end; ++start) {
        if (start + distance * (start_n - 1) >= end) break;  // no n-gram fits from here on
        size_t at = 0;
        int64_t item = start;
        for (int64_t n = 1; n <= max_n && item < end && !nodes_[at].children.empty(); ++n) {
          const auto child = nodes_[at].children.find(row[static_cast<size_t>(item)]);
          if (child == nodes_[at].children.end()) break;
          at = child->second;
          if (n >= start_n && nodes_[at].id != 0) found(nodes_[at].id);
          item += distance;
        }
      }
      if (start_n == 1 && ++start_n > max_n) break;
    }
  }

 private:
  struct TrieNode {
    std::map<Item, size_t> children;
    size_t id = 0;
  };
  std::vector<TrieNode> nodes_{1};
};

struct Attributes {
  std::string mode;
  int64_t min_n = 0, max_n = 0, max_skip = 0;
  std::vector<int64_t> counts, indexes;
  std::vector<float> weights;
  int64_t output_size = 0;
};

Attributes read_attributes(const OpContext& ctx, size_t pool_size) {
  Attributes a;
  for (const char* name : {"mode", "min_gram_length", "max_gram_length", "max_skip_count",
                           "ngram_counts", "ngram_indexes"})
    if (!ctx.has(name)) ctx.invalid("needs the attribute '" + std::string(name) + "'");
  a.mode = ctx.attr_string("mode", "");
  if (a.mode != "TF" && a.mode != "IDF" && a.mode != "TFIDF")
    ctx.invalid("mode '" + a.mode + "' (TF, IDF or TFIDF)");
  a.min_n = ctx.attr_int("min_gram_length", 0);
  a.max_n = ctx.attr_int("max_gram_length", 0);
  a.max_skip = ctx.attr_int("max_skip_count", 0);
  if (a.min_n < 1 || a.max_n < a.min_n || a.max_skip < 0)
    ctx.invalid("gram lengths " + std::to_string(a.min_n) + " to " + std::to_string(a.max_n) +
                " and max_skip_count " + std::to_string(a.max_skip) +
                " (lengths from 1, skips from 0)");
  a.counts = ctx.attr_ints("ngram_counts");
  for (size_t i = 0; i < a.counts.size(); ++i)
    if (a.counts[i] < (i ? a.counts[i - 1] : 0) || a.counts[i] > static_cast<int64_t>(pool_size))
      ctx.invalid("ngram_counts " + to_string(a.counts) + " does not rise within the pool's " +
                  std::to_string(pool_size) + " items");
  a.indexes = ctx.attr_ints("ngram_indexes");
  if (a.indexes.empty()) ctx.invalid("ngram_indexes is empty");
  for (int64_t index : a.indexes)
    if (index < 0) ctx.invalid("ngram_indexes " + to_string(a.indexes) + " has a negative index");
  a.output_size = *std::max_element(a.indexes.begin(), a.indexes.end()) + 1;
  a.weights = ctx.attr_floats("weights");
  // ONNX's reference and ONNX Runtime weigh output coordinate i by weights[i].
  if (!a.weights.empty() && a.mode != "TF" &&
      static_cast<int64_t>(a.weights.size()) < a.output_size)
    ctx.invalid("weights holds " + std::to_string(a.weights.size()) + " values for rows of " +
                std::to_string(a.output_size));
  return a;
}

// The pool's n-grams of the lengths counted, ids in pool order over every length.
template <class Item>
NgramTrie<Item> build_trie(const OpContext& ctx, const std::vector<Item>& pool,
                           const Attributes& a) {
  NgramTrie<Item> trie;
  size_t id = 1;
  for (size_t level = 0; level < a.counts.size(); ++level) {
    const auto n = static_cast<int64_t>(level + 1);
    const auto begin = static_cast<size_t>(a.counts[level]);
    const size_t end =
        level + 1 < a.counts.size() ? static_cast<size_t>(a.counts[level + 1]) : pool.size();
    const size_t grams = (end - begin) / static_cast<size_t>(n);
    for (size_t g = 0; g < grams; ++g, ++id) {
      if (n < a.min_n || n > a.max_n) continue;
      const auto first = pool.begin() + static_cast<std::ptrdiff_t>(begin + g * n);
      trie.add(std::vector<Item>(first, first + n), id);
    }
  }
  if (id - 1 > a.indexes.size())
    ctx.invalid("the pool holds " + std::to_string(id - 1) + " n-grams; ngram_indexes only " +
                std::to_string(a.indexes.size()));
  return trie;
}

template <class Item>
Tensor vectorize(const OpContext& ctx, const std::vector<Item>& items, const Shape& shape,
                 const std::vector<Item>& pool) {
  const Attributes a = read_attributes(ctx, pool.size());
  if (shape.size() > 2)
    ctx.invalid("takes a [C] or [B, C] input, not rank " + std::to_string(shape.size()));
  const bool batched = shape.size() == 2;
  if (batched && shape[0] < 1)
    ctx.invalid("takes a [B, C] input with B > 0, not " + to_string(shape));
  const int64_t rows = batched ? shape[0] : 1;
  const int64_t width = shape.empty() ? 1 : shape.back();
  const auto size = detail::checked_mul(rows, a.output_size);
  if (!size || *size > (int64_t{1} << 40))
    ctx.invalid(std::to_string(rows) + " rows of " + std::to_string(a.output_size) +
                " coordinates (ngram_indexes) are more than memory holds");
  std::vector<int64_t> frequencies(static_cast<size_t>(*size));
  const NgramTrie<Item> trie = build_trie(ctx, pool, a);
  if (!trie.empty())
    for (int64_t r = 0; r < rows; ++r) {
      const auto first = items.begin() + static_cast<std::ptrdiff_t>(r * width);
      const std::vector<Item> row(first, first + width);
      trie.count(row, a.min_n, a.max_n, a.max_skip, [&](size_t id) {
        ++frequencies[static_cast<size_t>(r * a.output_size + a.indexes[id - 1])];
      });
    }
  std::vector<float> out(frequencies.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const auto f = static_cast<float>(frequencies[i]);
    const size_t column = i % static_cast<size_t>(a.output_size);
    const float w = a.weights.empty() ? 1.0f : a.weights[column];
    out[i] = a.mode == "TF" ? f : a.mode == "IDF" ? (f > 0 ? w : 0.0f) : w * f;
  }
  const Shape out_shape = batched ? Shape{rows, a.output_size} : Shape{a.output_size};
  return from_vector(out, out_shape, ctx.stream());
}

Values tfidf_vectorizer(const OpContext& ctx, const Values& in) {
  const std::vector<int64_t> int_pool = ctx.attr_ints("pool_int64s");
  const std::vector<std::string> string_pool = ctx.attr_strings("pool_strings");
  if (int_pool.empty() == string_pool.empty())
    ctx.invalid("needs exactly one of pool_int64s and pool_strings");
  if (in.empty()) ctx.invalid("has no input");
  if (const auto* strings = std::get_if<StringTensor>(&in[0])) {
    if (string_pool.empty()) ctx.invalid("reads strings, but its pool is pool_int64s");
    return {vectorize(ctx, strings->data, strings->shape, string_pool)};
  }
  const Tensor& x = ctx.tensor(in, 0);
  if (!x.defined() || (x.dtype() != DType::i32 && x.dtype() != DType::i64))
    ctx.invalid("input 0 is " + x.describe() + "; TfIdfVectorizer takes int32, int64 or strings");
  if (int_pool.empty()) ctx.invalid("reads integers, but its pool is pool_strings");
  return {vectorize(ctx, ctx.read_ints(x), x.shape(), int_pool)};
}

}  // namespace

std::vector<OnnxOp> tfidf_onnx_ops() {
  return {
      {"TfIdfVectorizer", 9, nullptr, tfidf_vectorizer, nullptr, true},
  };
}

}  // namespace hal::model
