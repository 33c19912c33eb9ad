// DeviceMesh: the grid, its sub-meshes and their communicators, made once at creation so that
// a lookup is an index.
#include <algorithm>
#include <set>

#include "hal/error.hpp"

#include "dist/local/local_group.hpp"
#include "dist/process_group.hpp"
#include "hal/registry.hpp"

namespace hal::dist {

struct DeviceMesh::State {
  Shape shape;
  std::vector<std::string> names;
  int64_t size = 0;
  int process_rank = 0, process_count = 1;
  int64_t per_process = 0;
  std::vector<Device> devices;
  std::vector<Engine> engines;                   // per dimension
  std::vector<std::vector<SubMesh>> sub_meshes;  // [dimension][local device]
};

namespace {

[[noreturn]] void refuse(ErrorCode code, const std::string& why) {
  throw Error(code, "DeviceMesh::create: " + why);
}

std::string shape_text(const Shape& shape, const std::vector<std::string>& names) {
  std::string text = "{";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + names[d] + "=" + std::to_string(shape[d]);
  return text + "}";
}

void check_names(const Shape& shape, const std::vector<std::string>& names) {
  if (shape.empty()) refuse(ErrorCode::InvalidArgument, "the shape has no dimensions");
  if (names.size() != shape.size())
    refuse(ErrorCode::InvalidArgument, std::to_string(names.size()) + " names for " +
                                           std::to_string(shape.size()) + " dimensions " +
                                           hal::to_string(shape));
  std::set<std::string> seen;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1)
      refuse(ErrorCode::InvalidArgument, "dimension " + std::to_string(d) + " of " +
                                             hal::to_string(shape) + " is not positive");
    if (names[d].empty())
      refuse(ErrorCode::InvalidArgument, "dimension " + std::to_string(d) + " has no name");
    if (!seen.insert(names[d]).second)
      refuse(ErrorCode::InvalidArgument, "the name '" + names[d] + "' is given twice");
  }
}

// Backends in the order a mesh prefers them when none is named: CUDA, the plugins, OpenCL and
// Vulkan, the CPU.
int preference(std::string_view backend) {
  if (backend == "cuda") return 0;
  if (backend == "vulkan") return 2;  // hal's own, beside OpenCL: after the vendors' plugins
  if (backend == "opencl") return 2;
  if (backend == "cpu") return 3;
  return 1;
}

std::vector<Device> choose_devices(const MeshOptions& options, int64_t per_process,
                                   int local_rank) {
  if (!options.devices.empty()) {
    if (static_cast<int64_t>(options.devices.size()) != per_process)
      refuse(ErrorCode::InvalidArgument, std::to_string(options.devices.size()) +
                                             " devices given; the mesh needs " +
                                             std::to_string(per_process) + " in each process");
    for (const Device& d : options.devices)
      if (!d) refuse(ErrorCode::InvalidArgument, "an empty Device among the devices given");
    return options.devices;
  }
  std::vector<std::pair<std::string, std::vector<Device>>> backends;
  for (const Device& d : devices()) {
    const std::string backend(d.info().backend());
    auto it = std::find_if(backends.begin(), backends.end(),
                           [&](const auto& entry) { return entry.first == backend; });
    if (it == backends.end()) it = backends.insert(backends.end(), {backend, {}});
    it->second.push_back(d);
  }
  std::stable_sort(backends.begin(), backends.end(), [](const auto& a, const auto& b) {
    return preference(a.first) < preference(b.first);
  });
  std::string seen;
  for (const auto& [backend, list] : backends) {
    seen += (seen.empty() ? "" : ", ") + backend + " " + std::to_string(list.size());
    if (!options.backend.empty() && backend != options.backend) continue;
    const int64_t count = static_cast<int64_t>(list.size());
    // One device a process: the one at its local rank, from a backend that has one there.
    if (per_process == 1 && count > local_rank) return {list[static_cast<size_t>(local_rank)]};
    if (per_process > 1 && count >= per_process)
      return std::vector<Device>(list.begin(), list.begin() + per_process);
  }
  // More processes on this node than any backend has devices: they share the first backend's,
  // in turn (four ranks on one cpu:0, as tests and small jobs run).
  for (const auto& [backend, list] : backends)
    if (per_process == 1 && !list.empty() &&
        (options.backend.empty() || backend == options.backend))
      return {list[static_cast<size_t>(local_rank) % list.size()]};
  refuse(ErrorCode::NotFound,
         "the mesh needs " + std::to_string(per_process) + " devices in each process" +
             (options.backend.empty() ? std::string() : " of backend '" + options.backend + "'") +
             "; this process sees " + (seen.empty() ? std::string("none") : seen));
}

std::vector<int64_t> coordinates_of(const Shape& shape, int64_t rank) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = rank % shape[d];
    rank /= shape[d];
  }
  return c;
}

std::string group_name(const std::string& dim, const std::vector<int64_t>& coordinates,
                       size_t along) {
  std::string text = dim + " [";
  for (size_t d = 0; d < coordinates.size(); ++d)
    text += (d ? ", " : "") + (d == along ? std::string("*") : std::to_string(coordinates[d]));
  return text + "]";
}

}  // namespace

DeviceMesh DeviceMesh::create(const Shape& shape, const std::vector<std::string>& names,
                              const MeshOptions& options) {
  check_names(shape, names);
  auto state = std::make_shared<State>();
  state->shape = shape;
  state->names = names;
  state->size = numel(shape);
  const detail::Processes processes = detail::job_processes();
  state->process_rank = processes.rank;
  state->process_count = processes.count;
  if (state->size % processes.count != 0)
    refuse(ErrorCode::InvalidArgument,
           "the mesh " + shape_text(shape, names) + " has " + std::to_string(state->size) +
               " ranks, not a multiple of the " + std::to_string(processes.count) + " processes");
  state->per_process = state->size / processes.count;
  state->devices = choose_devices(options, state->per_process, launch_info().local_rank);
  const int64_t p = state->per_process;
  const int64_t first = state->process_rank * p;

  const size_t dims = shape.size();
  state->engines.resize(dims);
  state->sub_meshes.assign(dims, std::vector<SubMesh>(static_cast<size_t>(p)));
  int64_t stride = 1;
  std::vector<int64_t> strides(dims);
  for (size_t d = dims; d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  for (size_t d = 0; d < dims; ++d) {
    const int64_t extent = strides[d] * shape[d];
    const bool local = shape[d] == 1 || p % extent == 0;
    const bool across = !local && strides[d] % p == 0;
    if (!local && !across)
      refuse(ErrorCode::Unsupported,
             "dimension '" + names[d] + "' of " + shape_text(shape, names) + " puts devices of " +
                 "one process and of several processes in one group (" + std::to_string(p) +
                 " devices a process): each dimension must lie within one "
                 "process or across processes at one device each; reorder the dimensions so "
                 "that the local ones come last");
    for (int64_t j = 0; j < p; ++j) {
      SubMesh& sub = state->sub_meshes[d][static_cast<size_t>(j)];
      if (!sub.ranks_.empty()) continue;  // filled with its group below
      const int64_t rank = first + j;
      const std::vector<int64_t> c = coordinates_of(shape, rank);
      const int64_t base = rank - c[d] * strides[d];
      std::vector<int64_t> ranks(static_cast<size_t>(shape[d]));
      for (int64_t k = 0; k < shape[d]; ++k) ranks[static_cast<size_t>(k)] = base + k * strides[d];
      const std::string name = group_name(names[d], c, d);
      if (local) {
        std::vector<Device> members;
        for (int64_t member : ranks)
          members.push_back(state->devices[static_cast<size_t>(member - first)]);
        const std::vector<Communicator> comms = detail::make_local(members, name);
        for (int64_t k = 0; k < shape[d]; ++k) {
          SubMesh& entry =
              state->sub_meshes[d][static_cast<size_t>(ranks[static_cast<size_t>(k)] - first)];
          entry.name_ = names[d];
          entry.ranks_ = ranks;
          entry.rank_ = k;
          entry.device_ = members[static_cast<size_t>(k)];
          entry.communicator_ = comms[static_cast<size_t>(k)];
        }
        state->engines[d] = Engine::local;
      } else {
        sub.name_ = names[d];
        sub.ranks_ = ranks;
        sub.rank_ = c[d];
        sub.device_ = state->devices[static_cast<size_t>(j)];
        sub.communicator_ = detail::split_processes(static_cast<int>(base), static_cast<int>(c[d]),
                                                    name, sub.device_);
        state->engines[d] = sub.communicator_.engine();
      }
    }
  }
  DeviceMesh mesh;
  mesh.state_ = std::move(state);
  return mesh;
}

namespace {

const DeviceMesh::State& checked_state(const std::shared_ptr<const DeviceMesh::State>& state);

}  // namespace

const Shape& DeviceMesh::shape() const { return checked_state(state_).shape; }
const std::vector<std::string>& DeviceMesh::names() const { return checked_state(state_).names; }
int64_t DeviceMesh::size() const { return checked_state(state_).size; }
int DeviceMesh::process_rank() const { return checked_state(state_).process_rank; }
int DeviceMesh::process_count() const { return checked_state(state_).process_count; }
const std::vector<Device>& DeviceMesh::devices() const { return checked_state(state_).devices; }

int64_t DeviceMesh::rank_of(size_t local) const {
  const State& s = checked_state(state_);
  if (local >= s.devices.size())
    throw Error(ErrorCode::OutOfRange, "DeviceMesh: local device " + std::to_string(local) +
                                           " of " + std::to_string(s.devices.size()));
  return s.process_rank * s.per_process + static_cast<int64_t>(local);
}

std::vector<int64_t> DeviceMesh::coordinates(int64_t mesh_rank) const {
  const State& s = checked_state(state_);
  if (mesh_rank < 0 || mesh_rank >= s.size)
    throw Error(ErrorCode::OutOfRange, "DeviceMesh: rank " + std::to_string(mesh_rank) +
                                           " is not in the mesh of " + std::to_string(s.size));
  return coordinates_of(s.shape, mesh_rank);
}

namespace {

size_t dimension(const DeviceMesh::State& s, std::string_view dim) {
  for (size_t d = 0; d < s.names.size(); ++d)
    if (s.names[d] == dim) return d;
  std::string known;
  for (const std::string& name : s.names) known += (known.empty() ? "" : ", ") + name;
  throw Error(ErrorCode::InvalidArgument,
              "DeviceMesh: no dimension '" + std::string(dim) + "' (the mesh has " + known + ")");
}

const DeviceMesh::State& checked_state(const std::shared_ptr<const DeviceMesh::State>& state) {
  if (!state)
    throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) DeviceMesh");
  return *state;
}

}  // namespace

Engine DeviceMesh::engine(std::string_view dim) const {
  const State& s = checked_state(state_);
  return s.engines[dimension(s, dim)];
}

SubMesh DeviceMesh::sub_mesh(std::string_view dim, size_t local) const {
  const State& s = checked_state(state_);
  const size_t d = dimension(s, dim);
  if (local >= s.devices.size())
    throw Error(ErrorCode::OutOfRange, "DeviceMesh: local device " + std::to_string(local) +
                                           " of " + std::to_string(s.devices.size()));
  return s.sub_meshes[d][local];
}

}  // namespace hal::dist
