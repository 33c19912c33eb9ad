// Pipelines: no stages, no buffers, a stage that throws or returns nothing, a micro-batch that
// cannot be copied in, a stage out of range. Each failing micro-batch must leave nothing behind:
// the harness checks every allocator once the pipeline is gone.
#include "case_helpers.hpp"

namespace hal::test::bad_input {
namespace {

Tensors identity(const Tensors& in, Stream&) { return in; }

}  // namespace

Area pipeline_cases() {
  using enum ErrorCode;
  return {
      "pipelines",
      {
          {"pipeline_without_stages",
           [](const Device&, Stream&) { Pipeline pipeline(std::vector<PipelineStage>{}); },
           InvalidArgument, "no stages"},
          {"pipeline_with_no_buffers",
           [](const Device& d, Stream&) {
             Pipeline({{"a", d, identity}}, {.buffers = 0});
           },
           InvalidArgument, "buffers is 0"},
          {"pipeline_stage_without_a_function",
           [](const Device& d, Stream&) {
             Pipeline({{"a", d, nullptr}});
           },
           InvalidArgument, "has no function"},
          with_another_device({"pipeline_stage_that_throws_after_its_inputs_were_copied_in",
                               [](const Device& d, Stream& s) {
                                 Pipeline pipeline({{"first", d, identity},
                                                    {"throws", another_device(d),
                                                     [](const Tensors&, Stream&) -> Tensors {
                                                       throw Error(Unsupported,
                                                                   "no kernel for this");
                                                     }}});
                                 const Tensor x = zeros({16, 16}, DType::f32, s);
                                 s.synchronize();
                                 pipeline.submit({x});
                               },
                               Unsupported, "pipeline stage 1 'throws'"}),
          {"pipeline_stage_returning_an_undefined_tensor",
           [](const Device& d, Stream& s) {
             Pipeline pipeline(
                 {{"nothing", d, [](const Tensors&, Stream&) { return Tensors{Tensor()}; }}});
             const Tensor x = zeros({4}, DType::f32, s);
             s.synchronize();
             pipeline.submit({x});
           },
           InvalidArgument, "undefined"},
          with_another_device(
              {"pipeline_micro_batch_not_contiguous_on_another_device",
               [](const Device& d, Stream&) {
                 Pipeline pipeline({{"a", d, identity}});
                 pipeline.submit({empty({4, 8}, DType::f32, another_device(d)).transpose(0, 1)});
               },
               InvalidArgument, "not contiguous"}),
          {"pipeline_micro_batch_with_an_undefined_tensor",
           [](const Device& d, Stream&) {
             Pipeline pipeline({{"a", d, identity}});
             pipeline.submit({Tensor()});
           },
           InvalidArgument, "undefined"},
          {"pipeline_stage_past_the_last",
           [](const Device& d, Stream&) {
             Pipeline({{"a", d, identity}}).stage(1);
           },
           OutOfRange, "no stage 1 of 1"},
      }};
}

}  // namespace hal::test::bad_input
