#include "eval_processes.hpp"

#include "hal/dtype.hpp"
#include "json_text.hpp"

namespace hal::tool {
namespace {

// Tags of one rank's messages to rank 0: the header's length, the header, then the outputs.
constexpr int kHeaderLengthTag = 1, kHeaderTag = 2, kFirstOutputTag = 3;

ErrorCode error_code_named(const std::string& name) {
  for (int32_t code = 1; code <= static_cast<int32_t>(ErrorCode::AsyncFailure); ++code)
    if (to_string(static_cast<ErrorCode>(code)) == name) return static_cast<ErrorCode>(code);
  return ErrorCode::Internal;
}

// What rank 0 needs to receive the outputs, and the rest of the part.
nlohmann::ordered_json header_of(const ProcessPart& part) {
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (const auto& [name, tensor] : part.outputs)
    outputs.push_back({{"name", name},
                       {"dtype", std::string(to_string(tensor.dtype()))},
                       {"shape", tensor.shape()}});
  nlohmann::ordered_json header{
      {"devices", part.devices}, {"outputs", outputs}, {"error", nullptr}};
  if (part.failed)
    header["error"] = {{"code", std::string(to_string(part.error_code))},
                       {"message", part.error_message}};
  return header;
}

void send_part(const dist::Communicator& world, const ProcessPart& part, Stream& host) {
  const std::string header = header_of(part).dump(-1, ' ', false, kReplaceBadUtf8);
  const Tensor length =
      from_vector(std::vector<int64_t>{static_cast<int64_t>(header.size())}, {1}, host);
  world.send(length, 0, host, kHeaderLengthTag).wait();
  const Tensor bytes =
      from_host(header.data(), {static_cast<int64_t>(header.size())}, DType::u8, host);
  world.send(bytes, 0, host, kHeaderTag).wait();
  int tag = kFirstOutputTag;
  for (const auto& [name, tensor] : part.outputs) {
    if (tensor.numel() > 0) world.send(tensor.contiguous(host), 0, host, tag).wait();
    ++tag;
  }
}

ProcessPart receive_part(const dist::Communicator& world, int rank, Stream& host) {
  const Device cpu = host.device();
  const Tensor length = empty({1}, DType::i64, cpu);
  world.recv(length, rank, host, kHeaderLengthTag).wait();
  const int64_t size = length.to_vector<int64_t>(host).front();
  const Tensor bytes = empty({size}, DType::u8, cpu);
  world.recv(bytes, rank, host, kHeaderTag).wait();
  const std::vector<uint8_t> text = bytes.to_vector<uint8_t>(host);
  const auto header = nlohmann::ordered_json::parse(text.begin(), text.end());

  ProcessPart part;
  part.devices = header["devices"];
  if (!header["error"].is_null()) {
    part.failed = true;
    part.error_code = error_code_named(header["error"]["code"].get<std::string>());
    part.error_message = header["error"]["message"].get<std::string>();
  }
  int tag = kFirstOutputTag;
  for (const auto& output : header["outputs"]) {
    const std::optional<DType> dtype = parse_dtype(output["dtype"].get<std::string>());
    if (!dtype)
      throw Error(ErrorCode::Internal, "hal eval: rank " + std::to_string(rank) +
                                           " sent an output of unknown dtype " +
                                           output["dtype"].dump());
    const Tensor tensor = empty(output["shape"].get<Shape>(), *dtype, cpu);
    if (tensor.numel() > 0) world.recv(tensor, rank, host, tag).wait();
    part.outputs.emplace_back(output["name"].get<std::string>(), tensor);
    ++tag;
  }
  return part;
}

}  // namespace

dist::Communicator eval_processes() {
  const dist::LaunchInfo launch = dist::launch_info();
  if (!launch.several()) return {};
  if (!dist::mpi_built())
    throw Error(ErrorCode::BackendUnavailable,
                "hal eval: started as one of " +
                    (launch.size ? std::to_string(launch.size) : "several") + " processes (" +
                    launch.source + ") but this build of hal has no MPI engine to gather them");
  return dist::Communicator::world();
}

std::vector<ProcessPart> gather_parts(const dist::Communicator& world, ProcessPart mine,
                                      Stream& host) {
  if (world.rank() != 0) {
    send_part(world, mine, host);
    return {};
  }
  std::vector<ProcessPart> parts;
  parts.push_back(std::move(mine));
  for (int rank = 1; rank < world.size(); ++rank) parts.push_back(receive_part(world, rank, host));
  return parts;
}

}  // namespace hal::tool
