// Checkpoints in the safetensors format (link hal::train): an 8-byte little-endian header
// length, a JSON header {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
// ..., "__metadata__": {"key": "value"}}, then the tensors' row-major little-endian bytes. It is
// what Hugging Face's safetensors library reads and writes (dtypes F32, F16, BF16, F64, I8, U8,
// I32, I64, BOOL).
//
// Loading is all or nothing: the header, every entry's dtype, shape and byte range, and (for a
// module or optimizer) every name, shape and dtype are checked before anything is changed, and
// any fault is InvalidArgument naming the file and what is wrong (a missing, extra or
// mis-shaped tensor, offsets out of range or overlapping, a header that is not JSON or that
// claims more bytes than the file holds).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "hal/nn.hpp"
#include "hal/optim.hpp"

namespace hal {

struct Safetensors {
  std::vector<nn::NamedTensor> tensors;  // in the file's order of data
  std::map<std::string, std::string> metadata;
};

// Writes the tensors (any device, any layout; copied to the host on `stream`, which this
// waits for) and the metadata. Names must be unique and not "__metadata__". The file is written
// whole to a temporary beside `path` and renamed over it, so a crash never leaves half a file.
void save_safetensors(const std::filesystem::path& path,
                      const std::vector<nn::NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata, Stream& stream);
// Reads every tensor onto the stream's device.
Safetensors load_safetensors(const std::filesystem::path& path, Stream& stream);

// A training checkpoint: the module's parameters under their names, the optimizer's state under
// "optimizer.<name>", the module's extra state under "module.<key>" and the optimizer's values
// under "optimizer.<key>" in the metadata, and `metadata` besides (the caller's: epoch, ...).
void save_checkpoint(const std::filesystem::path& path, const nn::Module& module,
                     const optim::Optimizer& optimizer,
                     const std::map<std::string, std::string>& metadata, Stream& stream);
// Loads what save_checkpoint wrote into `module` and `optimizer` (made the same way, with the
// same parameters) and returns the caller's metadata. All or nothing.
std::map<std::string, std::string> load_checkpoint(const std::filesystem::path& path,
                                                   nn::Module& module, optim::Optimizer& optimizer,
                                                   Stream& stream);
// The module's parameters alone (PyTorch's state_dict file, model.safetensors).
void load_parameters(const std::filesystem::path& path, nn::Module& module, Stream& stream);

}  // namespace hal
