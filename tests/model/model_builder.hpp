// Small ONNX models built in the test with ONNX's own protobuf classes, serialized as a file
// would hold them.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace hal::test {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    auto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // A graph input or output; "N" style strings are symbolic dimensions, numbers fixed ones.
  ModelBuilder& input(const std::string& name, int32_t elem, std::vector<std::string> dims) {
    describe(model_.mutable_graph()->add_input(), name, elem, dims);
    return *this;
  }
  ModelBuilder& output(const std::string& name, int32_t elem, std::vector<std::string> dims) {
    describe(model_.mutable_graph()->add_output(), name, elem, dims);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, std::vector<int64_t> dims,
                            const std::vector<float>& values) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tensor->add_dims(d);
    for (float v : values) tensor->add_float_data(v);
    return *this;
  }
  ModelBuilder& string_initializer(const std::string& name, std::vector<int64_t> dims,
                                   const std::vector<std::string>& values) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::STRING);
    for (int64_t d : dims) tensor->add_dims(d);
    for (const auto& v : values) tensor->add_string_data(v);
    return *this;
  }
  onnx::TensorProto& raw_initializer(const std::string& name) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    return *tensor;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (auto& in : inputs) node->add_input(in);
    for (auto& out : outputs) node->add_output(out);
    return *node;
  }
  static void set_int(onnx::NodeProto& node, const std::string& name, int64_t value) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void set_ints(onnx::NodeProto& node, const std::string& name,
                       std::vector<int64_t> values) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void set_string(onnx::NodeProto& node, const std::string& name, const std::string& value) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  }
  static void set_strings(onnx::NodeProto& node, const std::string& name,
                          const std::vector<std::string>& values) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRINGS);
    for (const auto& v : values) a->add_strings(v);
  }
  static void set_float(onnx::NodeProto& node, const std::string& name, float value) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  static void set_floats(onnx::NodeProto& node, const std::string& name,
                         const std::vector<float>& values) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float v : values) a->add_floats(v);
  }
  onnx::ModelProto& proto() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void describe(onnx::ValueInfoProto* info, const std::string& name, int32_t elem,
                       const std::vector<std::string>& dims) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem);
    auto* shape = tensor->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
        dim->set_dim_value(std::stoll(d));
      else
        dim->set_dim_param(d);
    }
  }
  onnx::ModelProto model_;
};

}  // namespace hal::test
