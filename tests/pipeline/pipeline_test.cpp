// hal::Pipeline: results equal running the stages one after another and a host reference;
// micro-batches go through the stages in order; stages on one device and across backends;
// several threads submitting at once; errors named by stage and micro-batch. CTest runs this
// group with HAL_SIM_CONFIG=devices=4 (and the far test backend).
#include <atomic>
#include <cmath>
#include <random>
#include <thread>

#include "fleet.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

constexpr int64_t kRows = 4, kWidth = 8;

std::vector<float> random_values(size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> out(count);
  for (float& x : out) x = value(generator);
  return out;
}

// A stage's layer, relu(x W + b), with its weights on the stage's device and on the host.
struct Layer {
  std::vector<float> w, b;  // [kWidth, kWidth] and [kWidth]
  Tensor w_on_device, b_on_device;
};

class Pipelines : public ::testing::Test {
 protected:
  void SetUp() override {
    sims = sim_devices(4);
    if (sims.empty()) GTEST_SKIP() << "needs 4 sim devices (HAL_SIM_CONFIG=devices=4)";
    for (size_t k = 0; k < sims.size(); ++k) {
      Layer layer;
      layer.w = random_values(kWidth * kWidth, 10 + unsigned(k));
      layer.b = random_values(kWidth, 20 + unsigned(k));
      Stream stream = sims[k].create_stream();
      layer.w_on_device = from_vector(layer.w, {kWidth, kWidth}, stream);
      layer.b_on_device = from_vector(layer.b, {kWidth}, stream);
      stream.synchronize();
      layers.push_back(std::move(layer));
    }
  }

  PipelineStage linear_stage(size_t k) const {
    const Layer& layer = layers[k];
    return {"linear" + std::to_string(k), sims[k],
            [w = layer.w_on_device, b = layer.b_on_device](const Tensors& in, Stream& s) {
              return Tensors{relu(add(matmul(in.at(0), w, s), b, s), s)};
            }};
  }
  std::vector<PipelineStage> linear_stages() const {
    std::vector<PipelineStage> stages;
    for (size_t k = 0; k < sims.size(); ++k) stages.push_back(linear_stage(k));
    return stages;
  }

  // The four layers in double precision on the host.
  std::vector<float> host_reference(std::vector<float> x) const {
    for (const Layer& layer : layers) {
      std::vector<float> y(x.size());
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kWidth; ++c) {
          double sum = layer.b[c];
          for (int64_t j = 0; j < kWidth; ++j)
            sum += double(x[r * kWidth + j]) * layer.w[j * kWidth + c];
          y[r * kWidth + c] = static_cast<float>(std::max(sum, 0.0));
        }
      x = std::move(y);
    }
    return x;
  }

  std::vector<Device> sims;
  std::vector<Layer> layers;
  Device cpu = device("cpu:0");
};

void expect_close(const std::vector<float>& got, const std::vector<float>& expected,
                  const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], 1e-5 * (1 + std::fabs(expected[i])))
        << what << ", element " << i;
}

TEST_F(Pipelines, ResultsEqualRunningTheStagesOneAfterAnother) {
  constexpr int kBatches = 48;
  Stream host_side = cpu.create_stream();
  std::vector<std::vector<float>> values;
  std::vector<Tensors> batches;
  for (int i = 0; i < kBatches; ++i) {
    values.push_back(random_values(kRows * kWidth, 100 + i));
    batches.push_back({from_vector(values.back(), {kRows, kWidth}, host_side)});
  }
  host_side.synchronize();

  Pipeline pipeline(linear_stages());
  const std::vector<Tensors> outputs = pipeline.run(batches);
  ASSERT_EQ(outputs.size(), size_t{kBatches});

  // The same stages one after another: each on its device, waited for before the next.
  std::vector<PipelineStage> stages = linear_stages();
  std::vector<Stream> streams;
  for (const Device& d : sims) streams.push_back(d.create_stream());
  Stream reader = sims.back().create_stream();
  for (int i = 0; i < kBatches; ++i) {
    Tensors x = batches[i];
    for (size_t k = 0; k < stages.size(); ++k) {
      x = stages[k].run({x[0].to(sims[k], streams[k])}, streams[k]);
      streams[k].synchronize();
    }
    ASSERT_EQ(outputs[i].size(), 1u);
    EXPECT_EQ(outputs[i][0].device(), sims.back());
    const std::vector<float> got = outputs[i][0].to_vector<float>(reader);
    EXPECT_EQ(got, x[0].to_vector<float>(reader)) << "micro-batch " << i;
    expect_close(got, host_reference(values[i]), "micro-batch " + std::to_string(i));
  }
}

// A stage's input buffers are reused for later micro-batches (written in place): backward
// through an earlier micro-batch whose op saved its buffer is refused, not run on a later
// micro-batch's values; through the last micro-batch it gives the gradient of that one.
TEST_F(Pipelines, BackwardThroughAMicroBatchWhoseInputBufferWasReusedIsRefused) {
  Stream stream = sims[1].create_stream();
  Tensor w = from_vector<float>({1, 1}, {2, 1}, stream);
  stream.synchronize();
  w.requires_grad_();
  Pipeline pipeline({{"scale", sims[0],
                      [](const Tensors& in, Stream& s) {
                        return Tensors{mul(in.at(0), full({}, 1.0, DType::f32, s), s)};
                      }},
                     {"project", sims[1], [w](const Tensors& in, Stream& s) {
                        return Tensors{matmul(in.at(0), w, s)};
                      }}});
  Stream host_side = cpu.create_stream();
  std::vector<Tensors> batches;
  for (int i = 0; i < 4; ++i)
    batches.push_back({from_vector<float>({1.0f + 10 * i, 2.0f + 10 * i}, {1, 2}, host_side)});
  host_side.synchronize();
  const std::vector<Tensors> outputs = pipeline.run(batches);  // buffers 2: 0 and 1 overwritten
  expect_error([&] { sum(outputs[0][0], {}, false, stream).backward(stream); },
               ErrorCode::InvalidState, {"matmul", "in-place write", "version"});
  EXPECT_FALSE(w.grad().defined());  // nothing accumulated
  sum(outputs[3][0], {}, false, stream).backward(stream);
  EXPECT_EQ(w.grad().to_vector<float>(stream), std::vector<float>({31, 32}));
}

TEST_F(Pipelines, MicroBatchesGoThroughTheStagesInOrder) {
  constexpr int kBatches = 24;
  struct Entry {
    bool end;
    size_t stage;
    int batch;
  };
  std::mutex mutex;
  std::vector<Entry> log;
  std::vector<PipelineStage> stages = linear_stages();
  for (size_t k = 0; k < stages.size(); ++k) {
    auto inner = stages[k].run;
    auto calls = std::make_shared<int>(0);  // stage functions are called in submission order
    stages[k].run = [&, k, inner, calls](const Tensors& in, Stream& s) {
      const int batch = (*calls)++;
      auto note = [&mutex, &log, k, batch](bool end) {
        return [&mutex, &log, k, batch, end] {
          std::lock_guard lock(mutex);
          log.push_back({end, k, batch});
        };
      };
      s.host_callback(note(false));
      Tensors out = inner(in, s);
      s.host_callback(note(true));
      return out;
    };
  }
  Pipeline pipeline(std::move(stages));
  Stream host_side = cpu.create_stream();
  std::vector<Tensors> batches;
  for (int i = 0; i < kBatches; ++i)
    batches.push_back({normal({kRows, kWidth}, DType::f32, i, host_side)});
  host_side.synchronize();
  pipeline.run(batches);

  auto position = [&](bool end, size_t stage, int batch) {
    for (size_t at = 0; at < log.size(); ++at)
      if (log[at].end == end && log[at].stage == stage && log[at].batch == batch) return at;
    ADD_FAILURE() << "no " << (end ? "end" : "start") << " of stage " << stage << ", batch "
                  << batch;
    return size_t{0};
  };
  ASSERT_EQ(log.size(), size_t{2 * kBatches} * sims.size());
  for (int i = 0; i < kBatches; ++i)
    for (size_t k = 0; k < sims.size(); ++k) {
      EXPECT_LT(position(false, k, i), position(true, k, i));
      if (k + 1 < sims.size()) {
        EXPECT_LT(position(true, k, i), position(false, k + 1, i))
            << "stage " << k << ", batch " << i;
      }
      if (i + 1 < kBatches) {
        EXPECT_LT(position(true, k, i), position(false, k, i + 1))
            << "stage " << k << ", batch " << i;
      }
    }
}

TEST_F(Pipelines, StagesOnOneDeviceAndAcrossBackendsWithEachBufferCount) {
  // cpu:0 doubles, far:0 (memory the host cannot address) hands its input back, sim:0 applies
  // relu, sim:0 again negates (no copy between them), cpu:0 doubles: -4 relu(x), exactly.
  const Device far = device("far:0");
  auto twice = [](const Tensors& in, Stream& s) { return Tensors{add(in[0], in[0], s)}; };
  for (size_t buffers : {1, 2, 3}) {
    Pipeline pipeline(
        {{"double", cpu, twice},
         {"identity", far, [](const Tensors& in, Stream&) { return in; }},
         {"relu", sims[0], [](const Tensors& in, Stream& s) { return Tensors{relu(in[0], s)}; }},
         {"negate", sims[0], [](const Tensors& in, Stream& s) { return Tensors{neg(in[0], s)}; }},
         {"double again", cpu, twice}},
        {.buffers = buffers});
    Stream host_side = cpu.create_stream();
    std::vector<std::vector<float>> values;
    std::vector<Tensors> batches;
    for (int i = 0; i < 12; ++i) {
      values.push_back(random_values(kRows * kWidth, 200 + i));
      batches.push_back({from_vector(values.back(), {kRows, kWidth}, host_side)});
    }
    host_side.synchronize();
    const std::vector<Tensors> outputs = pipeline.run(batches);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::vector<float> expected = values[i];
      for (float& x : expected) x = -4.0f * std::max(x, 0.0f);
      EXPECT_EQ(outputs[i][0].to_vector<float>(host_side), expected)
          << "buffers " << buffers << ", micro-batch " << i;
    }
  }
}

TEST_F(Pipelines, SeveralThreadsSubmitAtOnce) {
  constexpr int kThreads = 4, kEach = 12;
  Pipeline pipeline(linear_stages());
  std::vector<std::thread> threads;
  std::atomic<int> checked{0};
  std::mutex indices_mutex;
  std::vector<size_t> indices;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Stream host_side = cpu.create_stream(), reader = sims.back().create_stream();
      std::vector<std::pair<std::vector<float>, PipelineTicket>> submitted;
      for (int i = 0; i < kEach; ++i) {
        std::vector<float> x = random_values(kRows * kWidth, 1000 * t + i);
        Tensor input = from_vector(x, {kRows, kWidth}, host_side);
        submitted.emplace_back(x, pipeline.submit({input}, host_side.record()));
      }
      for (auto& [x, ticket] : submitted) {
        reader.wait(ticket.done);
        expect_close(
            ticket.outputs[0].to_vector<float>(reader), host_reference(x),
            "thread " + std::to_string(t) + ", micro-batch " + std::to_string(ticket.index));
        ++checked;
        std::lock_guard lock(indices_mutex);
        indices.push_back(ticket.index);
      }
    });
  for (std::thread& thread : threads) thread.join();
  pipeline.synchronize();
  EXPECT_EQ(checked.load(), kThreads * kEach);
  std::sort(indices.begin(), indices.end());
  for (size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(indices[i], i);  // each index once
}

TEST_F(Pipelines, AStageThatThrowsIsNamedWithItsMicroBatchAndThePipelineGoesOn) {
  std::vector<PipelineStage> stages = linear_stages();
  auto calls = std::make_shared<int>(0);
  auto inner = stages[2].run;
  stages[2].name = "flaky";
  stages[2].run = [inner, calls](const Tensors& in, Stream& s) {
    if ((*calls)++ == 3) throw Error(ErrorCode::Unsupported, "no kernel for this");
    return inner(in, s);
  };
  Pipeline pipeline(std::move(stages));
  Stream host_side = cpu.create_stream(), reader = sims.back().create_stream();
  std::vector<std::vector<float>> values;
  std::vector<PipelineTicket> tickets;
  std::vector<std::string> reports;
  std::mutex reports_mutex;
  for (int i = 0; i < 6; ++i) {
    values.push_back(random_values(kRows * kWidth, 300 + i));
    const Tensor x = from_vector(values.back(), {kRows, kWidth}, host_side);
    host_side.synchronize();
    if (i != 3) {
      tickets.push_back(pipeline.submit({x}));
      continue;
    }
    const ErrorHandler previous = set_error_handler([&](const ErrorReport& report) {
      std::lock_guard lock(reports_mutex);
      reports.emplace_back(report.message);
    });
    try {
      pipeline.submit({x});
      ADD_FAILURE() << "micro-batch 3 went through";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::Unsupported);
      EXPECT_EQ(error.message(),
                "pipeline stage 2 'flaky' on sim:2, micro-batch 3: no kernel for this");
      EXPECT_EQ(error.device(), "sim:2");
      EXPECT_EQ(error.op(), "pipeline");
    }
    set_error_handler(previous);
    std::lock_guard lock(reports_mutex);
    ASSERT_EQ(reports.size(), 1u) << "reported once, with the stage";
    EXPECT_NE(reports[0].find("pipeline stage 2 'flaky'"), std::string::npos) << reports[0];
  }
  pipeline.synchronize();
  ASSERT_EQ(tickets.size(), 5u);
  for (const PipelineTicket& ticket : tickets) {
    reader.wait(ticket.done);
    expect_close(ticket.outputs[0].to_vector<float>(reader), host_reference(values[ticket.index]),
                 "micro-batch " + std::to_string(ticket.index));
  }
}

TEST_F(Pipelines, OtherExceptionsOfAStagePassThroughUnchanged) {
  Pipeline pipeline({{"throws", sims[0], [](const Tensors&, Stream&) -> Tensors {
                        throw std::logic_error("the stage's own exception");
                      }}});
  Stream host_side = cpu.create_stream();
  const Tensor x = zeros({kRows, kWidth}, DType::f32, host_side);
  host_side.synchronize();
  EXPECT_THROW(
      try { pipeline.submit({x}); } catch (const std::logic_error& error) {
        EXPECT_STREQ(error.what(), "the stage's own exception");
        throw;
      },
      std::logic_error);
  pipeline.synchronize();
}

TEST_F(Pipelines, AFailureOnAStagesStreamIsReportedWithTheStage) {
  std::vector<PipelineStage> stages = linear_stages();
  auto inner = stages[1].run;
  stages[1].run = [inner](const Tensors& in, Stream& s) {
    Tensors out = inner(in, s);
    s.host_callback([] { throw std::runtime_error("the stage's work broke"); });
    return out;
  };
  Pipeline pipeline(std::move(stages));
  Stream host_side = cpu.create_stream();
  const Tensor x = zeros({kRows, kWidth}, DType::f32, host_side);
  host_side.synchronize();
  expect_error(
      [&] {
        pipeline.run({{x}, {x}});
      },
      ErrorCode::AsyncFailure, {"pipeline stage 1 'linear1' on sim:1", "the stage's work broke"});
  pipeline.synchronize();  // reported once
}

TEST_F(Pipelines, AnOpThatRefusesItsOperandsIsNamedWithItsStage) {
  Pipeline pipeline(linear_stages());
  Stream host_side = cpu.create_stream();
  const Tensor wrong = zeros({kRows, kWidth + 1}, DType::f32, host_side);
  host_side.synchronize();
  expect_error([&] { pipeline.run({{wrong}}); }, ErrorCode::InvalidArgument,
               {"pipeline stage 0 'linear0' on sim:0, micro-batch 0: ", "matmul"});
}

TEST_F(Pipelines, BadPipelinesAndMicroBatchesAreRefused) {
  auto identity = [](const Tensors& in, Stream&) { return in; };
  expect_error([] { Pipeline(std::vector<PipelineStage>{}); }, ErrorCode::InvalidArgument,
               {"no stages"});
  expect_error(
      [&] {
        Pipeline({{"a", sims[0], identity}}, {.buffers = 0});
      },
      ErrorCode::InvalidArgument, {"buffers is 0"});
  // 2^62 slots of events threw std::length_error from the vector, no hal::Error.
  expect_error(
      [&] {
        Pipeline({{"a", sims[0], identity}}, {.buffers = size_t{1} << 62});
      },
      ErrorCode::InvalidArgument, {"buffers is 4611686018427387904", "1 to 1024"});
  expect_error(
      [&] {
        Pipeline({{"a", sims[0], identity}, {"b", Device(), identity}});
      },
      ErrorCode::InvalidArgument, {"pipeline stage 1 'b' has no device"});
  expect_error(
      [&] {
        Pipeline({{"a", sims[0], nullptr}});
      },
      ErrorCode::InvalidArgument, {"pipeline stage 0 'a' on sim:0 has no function"});

  Pipeline pipeline({{"a", sims[0], identity},
                     {"b", sims[1], [](const Tensors&, Stream&) { return Tensors{Tensor()}; }}});
  EXPECT_EQ(pipeline.size(), 2u);
  EXPECT_EQ(pipeline.stage(1).name, "b");
  EXPECT_EQ(pipeline.stream(1).device(), sims[1]);
  expect_error([&] { pipeline.stage(2); }, ErrorCode::OutOfRange, {"no stage 2 of 2"});
  expect_error([&] { pipeline.submit({Tensor()}); }, ErrorCode::InvalidArgument,
               {"input 0 of the micro-batch is undefined"});
  Stream host_side = cpu.create_stream();
  const Tensor square = zeros({kWidth, kWidth}, DType::f32, host_side);
  host_side.synchronize();
  expect_error([&] { pipeline.submit({square.transpose(0, 1)}); }, ErrorCode::InvalidArgument,
               {"pipeline stage 0 'a' on sim:0, micro-batch 0: input 0", "not contiguous"});
  expect_error([&] { pipeline.submit({square}); }, ErrorCode::InvalidArgument,
               {"pipeline stage 1 'b' on sim:1, micro-batch 1: output 0", "undefined"});
  expect_error([&] { pipeline.submit({square}, cpu.create_event()); }, ErrorCode::InvalidState,
               {"pipeline stage 0 'a' on sim:0, micro-batch 2", "never recorded"});
  pipeline.synchronize();
}

}  // namespace
}  // namespace hal::test
