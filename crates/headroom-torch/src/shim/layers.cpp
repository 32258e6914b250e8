// Headroom's per-layer profile of a user's TorchScript module: its top-level children by name,
// each run on its own. tch wraps a module's own methods but not its children. Tensors cross as
// the `torch::Tensor*` tch uses; a result is a new one that tch takes ownership of (and deletes).
// Every function catches C++ exceptions and reports them as a status plus a message.
#include <torch/script.h>
#include <cstring>
#include <exception>
#include <string>

namespace {
void hr_layers_message(const char* what, char* buf, size_t len) {
  if (buf == nullptr || len == 0) return;
  std::strncpy(buf, what, len - 1);
  buf[len - 1] = '\0';
}
}  // namespace

#define HR_LAYERS_GUARD(body)                                  \
  try {                                                        \
    body;                                                      \
    return 0;                                                  \
  } catch (const std::exception& e) {                          \
    hr_layers_message(e.what(), err, err_len);                 \
    return -1;                                                 \
  } catch (...) {                                              \
    hr_layers_message("unknown C++ exception", err, err_len);  \
    return -1;                                                 \
  }

extern "C" {

// Loads the module at `path` onto `device` ("cpu", "cuda:0", "mps"), in eval mode.
int hr_script_load(const char* path, const char* device, void** out, char* err, size_t err_len) {
  HR_LAYERS_GUARD({
    auto m = new torch::jit::Module(torch::jit::load(std::string(path), c10::Device(std::string(device))));
    m->eval();
    *out = m;
  })
}

void hr_script_free(void* m) { delete static_cast<torch::jit::Module*>(m); }

// The top-level children's names in order, '\n'-separated, into `names`; their count in *count.
int hr_script_children(void* m, char* names, size_t names_len, int* count, char* err, size_t err_len) {
  HR_LAYERS_GUARD({
    std::string all;
    int n = 0;
    for (const auto& c : static_cast<torch::jit::Module*>(m)->named_children()) {
      if (n > 0) all += '\n';
      all += c.name;
      n++;
    }
    if (all.size() + 1 > names_len) throw std::runtime_error("too many children to list");
    std::memcpy(names, all.c_str(), all.size() + 1);
    *count = n;
  })
}

// Runs child `name`'s forward on *x without gradients; *out is a new tensor.
int hr_script_child_forward(void* m, const char* name, void* x, void** out, char* err, size_t err_len) {
  HR_LAYERS_GUARD({
    torch::NoGradGuard no_grad;
    auto child = static_cast<torch::jit::Module*>(m)->attr(std::string(name)).toModule();
    auto result = child.forward({*static_cast<torch::Tensor*>(x)});
    *out = new torch::Tensor(result.toTensor());
  })
}

// The shapes of child `name`'s weights (parameters named `...weight`, nested ones included),
// as "64x256;10x256".
int hr_script_child_weights(void* m, const char* name, char* out, size_t out_len, char* err, size_t err_len) {
  HR_LAYERS_GUARD({
    auto child = static_cast<torch::jit::Module*>(m)->attr(std::string(name)).toModule();
    std::string all;
    for (const auto& p : child.named_parameters(true)) {
      const std::string& n = p.name;
      if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) continue;
      if (!all.empty()) all += ';';
      auto sizes = p.value.sizes();
      for (size_t i = 0; i < sizes.size(); i++) {
        if (i > 0) all += 'x';
        all += std::to_string(sizes[i]);
      }
    }
    if (all.size() + 1 > out_len) throw std::runtime_error("too many weights to list");
    std::memcpy(out, all.c_str(), all.size() + 1);
  })
}

}  // extern "C"
