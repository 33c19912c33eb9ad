// Who reads each value of a graph, who makes it, and which values the graph gives out: what
// the fusions at load (fusion.hpp, elementwise_fusion.hpp) ask before merging nodes.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/model_graph.hpp"

namespace hal::model {

class Uses {
 public:
  explicit Uses(const ModelGraph& graph) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      for (const std::string& name : graph.nodes[i].inputs)
        if (!name.empty()) readers_[name].push_back(i);
      for (const std::string& name : graph.nodes[i].captured)  // read inside a subgraph
        readers_[name].push_back(i);
      for (const std::string& name : graph.nodes[i].outputs)
        if (!name.empty()) makers_[name] = i;
    }
    for (const ModelValue& output : graph.outputs) outputs_.insert(output.name);
  }

  // The one node that reads `value`, where nothing else (the graph's outputs included) does.
  std::optional<size_t> only_reader(const std::string& value) const {
    const auto found = readers_.find(value);
    if (value.empty() || outputs_.contains(value) || found == readers_.end() ||
        found->second.size() != 1)
      return std::nullopt;
    return found->second[0];
  }
  // Whether node `node` reads `value` (once or more) and nothing else does, the graph's
  // outputs included.
  bool only_read_by(const std::string& value, size_t node) const {
    const auto found = readers_.find(value);
    if (value.empty() || outputs_.contains(value) || found == readers_.end()) return false;
    for (size_t reader : found->second)
      if (reader != node) return false;
    return true;
  }
  // The nodes that read `value`, in graph order, once per input that names it.
  const std::vector<size_t>& readers(const std::string& value) const {
    static const std::vector<size_t> none;
    const auto found = readers_.find(value);
    return found == readers_.end() ? none : found->second;
  }
  // Whether `value` is one of the graph's outputs.
  bool gives_out(const std::string& value) const { return outputs_.contains(value); }
  // The node that makes `value`, if a node does.
  std::optional<size_t> maker(const std::string& value) const {
    const auto found = makers_.find(value);
    if (found == makers_.end()) return std::nullopt;
    return found->second;
  }
  // Whether `value` is ready before node `index` runs (a graph input, an initializer, or made
  // by an earlier node).
  bool ready_before(const std::string& value, size_t index) const {
    const auto maker = makers_.find(value);
    return maker == makers_.end() || maker->second < index;
  }

 private:
  std::map<std::string, std::vector<size_t>, std::less<>> readers_;
  std::map<std::string, size_t, std::less<>> makers_;
  std::set<std::string, std::less<>> outputs_;
};

}  // namespace hal::model
