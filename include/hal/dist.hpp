// Collectives between devices and processes (link hal::dist, libhal_dist): a Communicator per
// rank with three engines (local: the devices of one process through device copies; MPI:
// processes started by mpirun; NCCL: NVIDIA GPUs, libnccl.so.2 opened at run time), Work
// handles ordered on streams, and DeviceMesh, torch.distributed.init_device_mesh's counterpart.
//
// Every collective is asynchronous and ordered on the stream it is given: it starts once the
// work enqueued before it on that stream is done, and work enqueued after it waits for it. It
// returns a Work at once; Work::wait blocks the host until this rank's part is done and throws
// its error. Tensors are contiguous, on the stream's device, of any dtype (f16 and bf16 reduce
// in f32 and round once per step; bool reduces as logic: sum and max are "or", prod and min
// "and"; avg takes floating dtypes only).
//
// Faults (docs/distributed.md): a rank that does not arrive within HAL_DIST_TIMEOUT seconds
// (default 60) makes the others fail with Timeout naming the collective, its number and the
// ranks that did not answer; an MPI or NCCL communicator is unusable after that (InvalidState),
// a local one stays usable (the late rank's call fails with the same Timeout). Before
// moving data every collective compares a small signature across ranks (kind, dtype, element
// count, root, op): a mismatch is InvalidArgument naming both ranks' calls, and the
// communicator stays usable. A recv is compared with its send by the local and MPI engines,
// not by NCCL's (NCCL pairs them by order alone). HAL_DIST_DEBUG=off skips the check, =detail adds
// full shapes and logs every collective at info level.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hal/device.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"

namespace hal::dist {

enum class ReduceOp : uint8_t { sum, prod, min, max, avg };
std::string_view to_string(ReduceOp op) noexcept;

enum class Engine : uint8_t { local, mpi, nccl };
std::string_view to_string(Engine engine) noexcept;

enum class Collective : uint8_t {
  all_reduce,
  broadcast,
  reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  send,
  recv,
  barrier,
};
std::string_view to_string(Collective collective) noexcept;

namespace detail {
class WorkState;
class CommunicatorImpl;
}  // namespace detail

// One rank's part of one collective. Cheap to copy; thread-safe.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  Collective collective() const;
  // The collective's number on its communicator, from 1 (the same on every rank).
  uint64_t sequence() const;
  // True once this rank's part has finished, well or not.
  bool completed() const;
  // Blocks until this rank's part has finished; throws its hal::Error (Timeout, DeviceLost,
  // InvalidArgument for a mismatch between ranks ...). Later calls throw it again.
  void wait() const;

  explicit operator bool() const { return state_ != nullptr; }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

// How the process was launched: its rank among the job's processes and on its node, from the
// launcher's environment (OMPI_COMM_WORLD_*, PMIX_RANK, PMI_RANK/PMI_SIZE, SLURM_PROCID ...),
// or rank 0 of 1 without a launcher. `source` names the variables read ("none" without).
// A figure no launcher variable states is 0 (a PMIx launcher states the rank alone): MPI tells
// the size once the job's communicator is made.
struct LaunchInfo {
  int rank = 0;
  int size = 1;  // 0: unknown
  int local_rank = 0;
  int local_size = 1;  // 0: unknown
  std::string source = "none";
  // Launched as one of several processes, or of a number the launcher does not state.
  bool several() const { return size != 1; }
};
LaunchInfo launch_info();

// Whether this build of hal has the MPI engine (HAL_HAVE_MPI), and whether NCCL loads here
// (`why` says why not).
bool mpi_built();
bool nccl_available(std::string* why = nullptr);

// Seconds a rank waits for the others (HAL_DIST_TIMEOUT, default 60; InvalidArgument for a
// malformed value, naming it).
double timeout_seconds();

// The ranks of one group, each driving its part of every collective through its own handle.
// Calls on one communicator must come in the same order on every rank (as with MPI and NCCL);
// a communicator may be called from many threads, the order between them being the order in
// which the calls return. Cheap to copy (copies share the rank).
class Communicator {
 public:
  Communicator() = default;
  explicit Communicator(std::shared_ptr<detail::CommunicatorImpl> impl) : impl_(std::move(impl)) {}

  // The job's processes, one rank each, through MPI (MPI_COMM_WORLD): initialises MPI with
  // MPI_THREAD_MULTIPLE if the application has not, and finalises it at exit if hal did.
  // Tensors may be on any device: device memory is staged through host memory unless the MPI
  // is CUDA-aware (MPIX_Query_cuda_support) and the tensor is on a CUDA device.
  // BackendUnavailable in a build without MPI.
  static Communicator world();
  // One rank per device of this process (rank i drives devices[i]), through device copies:
  // peer copies where the backend has them, staged through host memory otherwise (between
  // backends), reductions on the devices where their op tables allow, else on the host. Ring
  // all-reduce for large tensors, a binomial tree for small ones, chosen by the alpha-beta
  // model (choose_all_reduce). Devices may repeat (two ranks on cpu:0), each rank with its own
  // streams. InvalidArgument for an empty list.
  static std::vector<Communicator> local(const std::vector<Device>& devices);
  // One CUDA device per process through NCCL, bootstrapped over `bootstrap` (an MPI
  // communicator of the processes: its rank 0 makes the unique id). BackendUnavailable
  // without NCCL or MPI; InvalidArgument for a device that is not CUDA.
  static Communicator nccl(const Device& device, const Communicator& bootstrap);

  int rank() const;
  int size() const;
  Engine engine() const;
  // "world", "local(4)", "mesh dp[1]" ...: what messages call it.
  const std::string& name() const;
  // The device this rank drives (local and NCCL); an empty Device for MPI (any device).
  Device device() const;

  // In place: `tensor` becomes the reduction over ranks of every rank's `tensor`.
  Work all_reduce(const Tensor& tensor, ReduceOp op, Stream& stream) const;
  Work all_reduce(const Tensor& input, const Tensor& output, ReduceOp op, Stream& stream) const;
  // `tensor` of every rank becomes root's.
  Work broadcast(const Tensor& tensor, int root, Stream& stream) const;
  // Root's `output` becomes the reduction of every rank's `input`; other ranks' output is not
  // written (it may be an undefined Tensor there). `input` may be `output`.
  Work reduce(const Tensor& input, const Tensor& output, ReduceOp op, int root,
              Stream& stream) const;
  // `output` (size() x input's elements, any shape) receives every rank's input in rank order.
  Work all_gather(const Tensor& input, const Tensor& output, Stream& stream) const;
  // `input` holds size() chunks of output's element count; rank r's output is the reduction
  // of chunk r over ranks.
  Work reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op, Stream& stream) const;
  // Both hold size() equal chunks; chunk j of rank i's input becomes chunk i of rank j's output.
  Work all_to_all(const Tensor& input, const Tensor& output, Stream& stream) const;
  // Point to point: a send matches the recv of the same peer and tag, in order. A recv of
  // other element count or dtype than the send fails with InvalidArgument naming both.
  Work send(const Tensor& tensor, int peer, Stream& stream, int tag = 0) const;
  Work recv(const Tensor& tensor, int peer, Stream& stream, int tag = 0) const;
  // Later work on every rank's stream waits until every rank's stream has reached it.
  Work barrier(Stream& stream) const;

  explicit operator bool() const { return impl_ != nullptr; }
  const std::shared_ptr<detail::CommunicatorImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::CommunicatorImpl> impl_;
};

// The alpha-beta(-gamma) cost of an all-reduce of `bytes` over `ranks`, with `alpha_s` seconds
// per message (launch and latency), `beta_s_per_byte` per byte moved and `gamma_s_per_byte` per
// byte reduced. Ring: 2(p-1) steps of bytes/p; binomial tree: reduce up and broadcast down,
// 2 ceil(log2 p) steps of the whole message (docs/distributed.md).
enum class AllReduceAlgorithm : uint8_t { ring, tree };
std::string_view to_string(AllReduceAlgorithm algorithm) noexcept;
struct LinkModel {
  double alpha_s = 5e-6;
  double beta_s_per_byte = 1e-11;
  double gamma_s_per_byte = 3e-11;
};
double predict_all_reduce(AllReduceAlgorithm algorithm, int64_t ranks, double bytes,
                          const LinkModel& link);
// The faster of the two by the model (ring on a tie): what the local engine runs.
AllReduceAlgorithm choose_all_reduce(int64_t ranks, double bytes, const LinkModel& link);
// The model of a local group's devices: the largest launch latency and the smallest bandwidth
// of their stated peaks (a copy crosses the link once; a reduction reads two operands and
// writes one).
LinkModel link_model(const std::vector<Device>& devices);

struct MeshOptions {
  // This process's devices, in order: local rank j of the mesh is devices[j]. Empty: the
  // first (size / processes) devices of `backend`, or, without one, of the first backend in
  // the order cuda, the plugins, opencl, cpu that has that many (one device a process picks
  // the device at the process's local rank).
  std::vector<Device> devices;
  std::string backend;
};

class DeviceMesh;

// The ranks along one named dimension through one of this process's devices. The mesh hands
// one out by value, often as a temporary (`mesh["dp"].ranks()`), so its accessors return
// copies, not references into it: `for (int64_t r : mesh["dp"].ranks())` and
// `const auto& c = mesh["tp"].communicator();` stay valid past the temporary (a Device and a
// Communicator are shared handles, cheap to copy).
class SubMesh {
 public:
  std::string name() const { return name_; }
  int64_t size() const { return static_cast<int64_t>(ranks_.size()); }
  // This member's position along the dimension (its rank in the communicator).
  int64_t rank() const { return rank_; }
  // The mesh ranks along the dimension, in order.
  std::vector<int64_t> ranks() const { return ranks_; }
  Device device() const { return device_; }
  Communicator communicator() const { return communicator_; }

 private:
  friend class DeviceMesh;
  std::string name_;
  std::vector<int64_t> ranks_;
  int64_t rank_ = 0;
  Device device_;
  Communicator communicator_;
};

// An n-dimensional grid over processes x local devices: mesh rank = process rank x (devices
// per process) + local index, laid out row-major over `shape`. Each dimension's groups lie
// either within one process (local engine) or across processes at one device each (MPI, or
// NCCL for CUDA devices where it loads); a dimension that mixes both is refused with the
// reason. Creation is collective over the processes (it splits MPI communicators).
class DeviceMesh {
 public:
  DeviceMesh() = default;
  // InvalidArgument for a size that is not processes x devices, names that are empty, repeated
  // or of another count than the dimensions; NotFound when the devices are not there.
  static DeviceMesh create(const Shape& shape, const std::vector<std::string>& names,
                           const MeshOptions& options = {});

  const Shape& shape() const;
  const std::vector<std::string>& names() const;
  int64_t size() const;
  int process_rank() const;
  int process_count() const;
  // This process's devices, local index order.
  const std::vector<Device>& devices() const;
  int64_t rank_of(size_t local) const;  // the mesh rank of devices()[local]
  std::vector<int64_t> coordinates(int64_t mesh_rank) const;
  Engine engine(std::string_view dim) const;

  // The sub-mesh along `dim` through devices()[local]. InvalidArgument naming the dimensions
  // for an unknown name, OutOfRange for a local index past devices().
  SubMesh sub_mesh(std::string_view dim, size_t local = 0) const;
  SubMesh operator[](std::string_view dim) const { return sub_mesh(dim, 0); }

  explicit operator bool() const { return state_ != nullptr; }

  struct State;  // opaque

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace hal::dist
