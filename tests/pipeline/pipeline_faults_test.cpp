// A device lost while a pipeline runs (sim's injected fault): the run fails with DeviceLost
// naming the stage and the device, without hanging, and the other devices go on working.
// CTest runs this group with HAL_SIM_CONFIG=devices=4,lose_device_at=40,fault_device=2.
#include "fleet.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

TEST(PipelineFaults, ADeviceLostMidRunFailsItNamingTheStage) {
  HAL_NEED_SIMS(sims, 4);
  std::vector<PipelineStage> stages;
  for (size_t k = 0; k < sims.size(); ++k)
    stages.push_back({"relu" + std::to_string(k), sims[k],
                      [](const Tensors& in, Stream& s) { return Tensors{relu(in[0], s)}; }});
  Stream host_side = device("cpu:0").create_stream();
  std::vector<Tensors> batches;
  for (int i = 0; i < 32; ++i) batches.push_back({normal({4, 8}, DType::f32, i, host_side)});
  host_side.synchronize();
  {
    Pipeline pipeline(std::move(stages));
    try {
      pipeline.run(batches);
      FAIL() << "sim:2 was never lost";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::DeviceLost) << error.what();
      EXPECT_NE(error.message().find("pipeline stage 2 'relu2' on sim:2"), std::string::npos)
          << error.message();
      EXPECT_NE(error.message().find("micro-batch"), std::string::npos) << error.message();
    }
    expect_error([&] { pipeline.run(batches); }, ErrorCode::DeviceLost, {"sim:2"});
  }  // the pipeline's streams go without hanging
  for (size_t k : {0, 1, 3}) {
    Stream s = sims[k].create_stream();
    EXPECT_EQ(relu(full({3}, -1.0, DType::f32, s), s).to_vector<float>(s),
              std::vector<float>(3, 0.0f))
        << sims[k].id();
  }
  expect_error([&] { sims[2].create_stream(); }, ErrorCode::DeviceLost, {"sim:2"});
}

}  // namespace
}  // namespace hal::test
