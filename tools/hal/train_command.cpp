// `hal train [--devices ID,...] [--epochs N] [--batch N] [--lr X] [--hidden N] [--seed N]
// [--precision f32|bf16|f16] [--data DIR] [--curve FILE] [--no-fallback] [--json]`: trains an MLP
// on the handwritten digits kept in data/digits (scikit-learn's load_digits, converted by
// scripts/export_digits.py) with AdamW, on one device or data-parallel on several, showing a
// progress bar with the loss and throughput, then each epoch's test accuracy; writes the loss
// curve as SVG. --json prints hal.train/1 instead.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "commands.hpp"
#include "core/host_cpu.hpp"
#include "hal/autograd.hpp"
#include "hal/data_parallel.hpp"
#include "hal/error.hpp"
#include "hal/nn.hpp"
#include "hal/npy.hpp"
#include "hal/optim.hpp"
#include "hal/registry.hpp"
#include "hal/train.hpp"
#include "json_text.hpp"
#include "loss_curve.hpp"
#include "option_values.hpp"
#include "output_files.hpp"

namespace hal::tool {
namespace {

struct TrainOptions {
  std::vector<std::string> devices_text{"cpu:0"};
  std::string epochs_text = "10", batch_text = "32", lr_text = "0.01", hidden_text = "512",
              seed_text = "1";
  int64_t epochs = 10, batch = 32, hidden = 512;
  uint64_t seed = 1;
  double lr = 0.01;
  std::string data, curve = "hal-train-loss.svg", precision = "f32";
  DType compute = DType::f32;
  bool no_fallback = false, json = false;
};

struct Split {
  std::vector<float> x;  // [n, 64], pixels / 16
  std::vector<int64_t> y;
  int64_t n = 0;
};

constexpr int64_t kPixels = 64, kClasses = 10;

std::filesystem::path digits_dir(const TrainOptions& options) {
  if (!options.data.empty()) return options.data;
  if (std::filesystem::exists(std::filesystem::path(HAL_SOURCE_DATA_DIR) / "digits"))
    return std::filesystem::path(HAL_SOURCE_DATA_DIR) / "digits";
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return self.parent_path().parent_path() / "share" / "hal" / "data" / "digits";
}

Split read_split(const std::filesystem::path& dir, const std::string& name) {
  Stream cpu = hal::detail::host_cpu().create_stream();
  const Tensor x = read_npy(dir / (name + "_x.npy"), cpu);
  const Tensor y = read_npy(dir / (name + "_y.npy"), cpu);
  if (x.dim() != 2 || x.size(1) != kPixels || y.dim() != 1 || y.size(0) != x.size(0) ||
      y.dtype() != DType::i64)
    throw Error(ErrorCode::InvalidArgument,
                "digits data in " + dir.string() + ": " + name + "_x.npy must be [n, 64] and " +
                    name + "_y.npy int64 [n], got " + x.describe() + " and " + y.describe());
  if (x.size(0) == 0)  // a loss and an accuracy over no rows are NaN, not results
    throw Error(ErrorCode::InvalidArgument,
                "digits data in " + dir.string() + ": " + name + "_x.npy has no rows");
  Split split;
  split.n = x.size(0);
  for (float v : cast(x, DType::f32, cpu).to_vector<float>(cpu)) split.x.push_back(v / 16.0f);
  split.y = y.to_vector<int64_t>(cpu);
  for (int64_t label : split.y)
    if (label < 0 || label >= kClasses)
      throw Error(ErrorCode::InvalidArgument, "digits data in " + dir.string() + ": label " +
                                                  std::to_string(label) + " is not a digit");
  return split;
}

// Fisher-Yates with a 64-bit Mersenne twister: the same order on every machine.
std::vector<int64_t> shuffled(int64_t n, std::mt19937_64& random) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)],
              order[static_cast<size_t>(random() % static_cast<uint64_t>(i + 1))]);
  return order;
}

double accuracy(nn::Module& model, const Tensor& x, const std::vector<int64_t>& labels, Stream& s) {
  const NoGrad untracked;
  model.train(false);
  const std::vector<int64_t> predicted =
      argmax(model.forward(x, s), {1}, false, s).to_vector<int64_t>(s);
  model.train(true);
  int64_t right = 0;
  for (size_t i = 0; i < labels.size(); ++i) right += predicted[i] == labels[i];
  return static_cast<double>(right) / static_cast<double>(labels.size());
}

void progress(int64_t epoch, int64_t epochs, double done, double loss, double rate) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(done * kWidth);
  std::fprintf(stderr, "\repoch %3lld/%lld [%s%s] %3d%%  loss %.4f  %8.0f samples/s",
               static_cast<long long>(epoch), static_cast<long long>(epochs),
               std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(),
               static_cast<int>(done * 100), loss, rate);
  std::fflush(stderr);
}

// The loss of the digits MLP on a batch.
Tensor digits_loss(nn::Module& m, const Tensor& x, const Tensor& y, Stream& st) {
  return cross_entropy(m.forward(x, st), y, -100, 0.0, st);
}

// One device: a Trainer, its losses summed on the device without waiting. Several: data-parallel
// replicas, one per device, the global batch on cpu:0 split by measured throughput.
class DigitsLearner {
 public:
  DigitsLearner(const std::vector<Device>& devices, const TrainOptions& options)
      : devices_(devices), stream_(devices.front().create_stream()) {
    const auto make_optimizer = [&options](std::vector<nn::NamedTensor> parameters) {
      return std::make_unique<optim::AdamW>(
          std::move(parameters), optim::AdamWOptions{.lr = options.lr, .weight_decay = 1e-4});
    };
    const train::TrainerOptions trainer_options{.mixed_precision = {.compute = options.compute}};
    if (devices.size() == 1) {
      model_ = nn::make_mlp({kPixels, options.hidden, kClasses}, options.seed, stream_);
      optimizer_ = make_optimizer(model_->parameters());
      trainer_ = std::make_unique<train::Trainer>(*model_, *optimizer_, digits_loss, stream_,
                                                  trainer_options);
      return;
    }
    parallel_ = std::make_unique<train::LocalDataParallel>(
        devices,
        [&options](Stream& s) {
          return nn::make_mlp({kPixels, options.hidden, kClasses}, options.seed, s);
        },
        make_optimizer, digits_loss, train::DataParallelOptions{.trainer = trainer_options});
    shares_.assign(devices.size(), 0.0);
  }

  // Where the epoch's batches are uploaded: the device, or cpu:0 for several.
  Stream& data_stream() { return parallel_ ? cpu_stream_ : stream_; }

  void step(const Tensor& x, const Tensor& y) {
    if (!parallel_) {
      const Tensor loss = trainer_->step(x, y);
      const NoGrad untracked;
      loss_sum_ = loss_sum_.defined() ? add(loss_sum_, loss, stream_) : loss;
      return;
    }
    host_loss_sum_ += parallel_->step(x, y);
    const std::vector<int64_t>& counts = parallel_->rank(0).counts();
    for (size_t r = 0; r < counts.size(); ++r)
      shares_[r] += static_cast<double>(counts[r]) / static_cast<double>(x.size(0));
    ++parallel_steps_;
  }
  // The losses summed since the last call.
  double take_loss_sum() {
    double sum = host_loss_sum_;
    if (loss_sum_.defined()) sum += loss_sum_.to_vector<float>(stream_)[0];
    loss_sum_ = Tensor();
    host_loss_sum_ = 0;
    return sum;
  }
  void set_learning_rate(double lr) {
    if (!parallel_) return optimizer_->set_learning_rate(lr);
    for (size_t r = 0; r < parallel_->size(); ++r) parallel_->optimizer(r).set_learning_rate(lr);
  }
  void synchronize() { parallel_ ? parallel_->stream(0).synchronize() : stream_.synchronize(); }
  nn::Module& model() { return parallel_ ? parallel_->replica(0) : *model_; }
  Stream& model_stream() { return parallel_ ? parallel_->stream(0) : stream_; }

  // hal.train/1's devices: each one's mean share of the samples and its throughput (for one
  // device, the run's).
  nlohmann::ordered_json devices_json(double run_rate) const {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t r = 0; r < devices_.size(); ++r) {
      const double share =
          parallel_ ? shares_[r] / static_cast<double>(std::max<int64_t>(1, parallel_steps_)) : 1.0;
      const double rate = parallel_ ? parallel_->rank(0).samples_per_s()[r] : run_rate;
      out.push_back({{"id", devices_[r].id()}, {"share", share}, {"samples_per_s", rate}});
    }
    return out;
  }

 private:
  std::vector<Device> devices_;
  Stream stream_;
  Stream cpu_stream_ = hal::detail::host_cpu().create_stream();
  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<optim::AdamW> optimizer_;
  std::unique_ptr<train::Trainer> trainer_;
  std::unique_ptr<train::LocalDataParallel> parallel_;
  Tensor loss_sum_;
  double host_loss_sum_ = 0;
  std::vector<double> shares_;
  int64_t parallel_steps_ = 0;
};

void train_digits(const TrainOptions& options) {
  // Before the epochs: after them, the result would be lost with the refusal.
  if (!options.curve.empty()) check_output_file(options.curve, "--curve");
  std::vector<Device> devices;
  for (const std::string& id : options.devices_text) devices.push_back(device(id));
  std::string names;
  for (const Device& d : devices) names += (names.empty() ? "" : ", ") + d.id();
  const std::filesystem::path dir = digits_dir(options);
  const Split train_set = read_split(dir, "train"), test_set = read_split(dir, "test");
  const CpuFallback fallback(!options.no_fallback);
  DigitsLearner learner(devices, options);
  Stream& s = learner.model_stream();
  const Tensor test_x = from_vector(test_set.x, {test_set.n, kPixels}, s);
  std::mt19937_64 random(options.seed);
  nlohmann::ordered_json epochs = nlohmann::ordered_json::array();
  std::vector<CurvePoint> curve;
  int64_t batches = (train_set.n + options.batch - 1) / options.batch;
  // A last batch too small to give every device a sample joins the one before.
  if (batches > 1 &&
      train_set.n - (batches - 1) * options.batch < static_cast<int64_t>(devices.size()))
    --batches;
  const int64_t report_every = std::max<int64_t>(1, batches / 10);
  double seconds_total = 0, last_accuracy = 0;
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    // The epoch's order, uploaded once: each batch is a slice of it.
    const std::vector<int64_t> order = shuffled(train_set.n, random);
    std::vector<float> xs(static_cast<size_t>(train_set.n * kPixels));
    std::vector<int64_t> ys(static_cast<size_t>(train_set.n));
    for (int64_t i = 0; i < train_set.n; ++i) {
      const auto from = static_cast<size_t>(order[static_cast<size_t>(i)]);
      std::copy_n(train_set.x.begin() + static_cast<std::ptrdiff_t>(from * kPixels), kPixels,
                  xs.begin() + static_cast<std::ptrdiff_t>(i * kPixels));
      ys[static_cast<size_t>(i)] = train_set.y[from];
    }
    const auto start = std::chrono::steady_clock::now();
    Stream& data = learner.data_stream();
    const Tensor x_all = from_vector(xs, {train_set.n, kPixels}, data);
    const Tensor y_all = from_vector(ys, {train_set.n}, data);
    if (&data != &s) data.synchronize();  // the replicas copy their rows on their own streams
    int64_t interval_batches = 0;
    double epoch_loss = 0;
    for (int64_t b = 0; b < batches; ++b) {
      const int64_t first = b * options.batch,
                    last = b + 1 == batches ? train_set.n : first + options.batch;
      // Cosine decay from the given rate to 0 over the run: late steps settle.
      const double done = static_cast<double>((epoch - 1) * batches + b) /
                          static_cast<double>(options.epochs * batches);
      learner.set_learning_rate(options.lr * 0.5 * (1 + std::cos(M_PI * done)));
      learner.step(x_all.slice(0, first, last), y_all.slice(0, first, last));
      ++interval_batches;
      if ((b + 1) % report_every == 0 || b + 1 == batches) {
        const double mean = learner.take_loss_sum() / static_cast<double>(interval_batches);
        epoch_loss += mean * static_cast<double>(interval_batches);
        curve.push_back(
            {static_cast<double>(epoch - 1) + static_cast<double>(b + 1) / batches, mean});
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!options.json)
          progress(epoch, options.epochs, static_cast<double>(b + 1) / batches, mean,
                   static_cast<double>(last) / elapsed);
        interval_batches = 0;
      }
    }
    learner.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds_total += seconds;
    last_accuracy = accuracy(learner.model(), test_x, test_set.y, s);
    const double rate = static_cast<double>(train_set.n) / seconds;
    epoch_loss /= static_cast<double>(batches);
    if (!options.json)
      std::fprintf(stderr,
                   "\repoch %3lld/%lld  loss %.4f  test accuracy %.2f%%  %.0f samples/s%20s\n",
                   static_cast<long long>(epoch), static_cast<long long>(options.epochs),
                   epoch_loss, 100 * last_accuracy, rate, "");
    epochs.push_back({{"epoch", epoch},
                      {"loss", epoch_loss},
                      {"test_accuracy", last_accuracy},
                      {"samples_per_s", rate}});
  }
  const double rate = static_cast<double>(train_set.n * options.epochs) / seconds_total;
  if (!options.curve.empty()) {
    std::ofstream file(options.curve);
    file << loss_curve_svg(curve, "hal train: digits MLP on " + names);
    if (!file) throw Error(ErrorCode::InvalidArgument, "--curve: cannot write " + options.curve);
  }
  if (options.json) {
    const nlohmann::ordered_json report{
        {"schema", "hal.train/1"}, {"devices", learner.devices_json(rate)}, {"epochs", epochs}};
    std::cout << report.dump(2, ' ', false, kReplaceBadUtf8) << "\n";
    return;
  }
  std::cout << "digits MLP 64-" << options.hidden << "-10 on " << names << ": test accuracy "
            << 100 * last_accuracy << "% after " << options.epochs << " epochs, "
            << static_cast<int64_t>(rate) << " samples/s"
            << (options.curve.empty() ? "" : "; loss curve in " + options.curve) << "\n";
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "train",
      "Train an MLP on the handwritten digits (scikit-learn's, in data/digits) on a device");
  auto options = std::make_shared<TrainOptions>();
  command
      ->add_option("--devices", options->devices_text,
                   "The devices to train on (default cpu:0); several train data-parallel, the "
                   "batch split by each device's measured throughput")
      ->delimiter(',');
  command->add_option("--epochs", options->epochs_text,
                      "Passes over the training set (1 to 10000)");
  command->add_option("--batch", options->batch_text, "Samples per step (1 to 100000)");
  command->add_option("--lr", options->lr_text, "AdamW's learning rate (0 to 10)");
  command->add_option("--hidden", options->hidden_text, "The hidden layer's width (1 to 65536)");
  command->add_option("--seed", options->seed_text, "Seed of the weights and the shuffles");
  command->add_option("--data", options->data, "The digits' folder (default: data/digits)");
  command->add_option("--curve", options->curve,
                      "Write the loss curve as SVG to FILE ('' for none)");
  command->add_option("--precision", options->precision,
                      "f32, or bf16 or f16 for mixed precision (f32 master weights; f16 with "
                      "loss scaling)");
  command->add_flag("--no-fallback", options->no_fallback,
                    "Refuse ops the device cannot run instead of running them on cpu:0");
  command->add_flag("--json", options->json, "Print JSON (schema hal.train/1)");
  command->parse_complete_callback([options] {
    options->devices_text = names_option("--devices", options->devices_text);
    options->epochs =
        static_cast<int64_t>(count_option("--epochs", options->epochs_text, 1, 10000));
    options->batch = static_cast<int64_t>(count_option("--batch", options->batch_text, 1, 100000));
    options->hidden =
        static_cast<int64_t>(count_option("--hidden", options->hidden_text, 1, 65536));
    options->seed = count_option("--seed", options->seed_text, 0, UINT64_MAX);
    options->lr = real_option("--lr", options->lr_text, 0, 10);
    const std::optional<DType> precision = parse_dtype(options->precision);
    if (!precision ||
        (*precision != DType::f32 && *precision != DType::bf16 && *precision != DType::f16))
      throw Error(ErrorCode::InvalidArgument,
                  "--precision: '" + options->precision + "' is not f32, bf16 or f16");
    options->compute = *precision;
  });
  set_work(*command, [options] { train_digits(*options); });
}

}  // namespace hal::tool
