// The autograd node of autoconv's convolution in C++, for eager calls that need gradients.
//
//   y = conv2d(x, w, bias, geometry, forward_kernel)
//
// The forward calls `forward_kernel(x, w, bias)` (autoconv's kernel, a Python callable) and saves
// x and w; the backward is PyTorch's own convolution backward (at::convolution_backward), called
// without entering Python. `geometry` is {stride_h, stride_w, pad_top, pad_bottom, pad_left,
// pad_right, dilation_h, dilation_w}; asymmetric padding is applied to x first, and the gradient
// of the padded x cut back to x. Built on first use by autoconv/torch/native.py.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/extension.h>

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Conv2dNode : public torch::autograd::Function<Conv2dNode> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const std::optional<at::Tensor>& bias, const std::vector<int64_t>& geometry,
                            const py::object& forward_kernel) {
    at::Tensor y = forward_kernel(x, w, bias).cast<at::Tensor>();
    ctx->save_for_backward({x, w});
    ctx->saved_data["geometry"] = geometry;
    ctx->saved_data["has_bias"] = bias.has_value();
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    const std::vector<int64_t> g = ctx->saved_data["geometry"].toIntVector();
    const bool has_bias = ctx->saved_data["has_bias"].toBool();
    const int64_t top = g[2], bottom = g[3], left = g[4], right = g[5];
    const bool symmetric = top == bottom && left == right;
    const at::Tensor padded_x = symmetric ? x : at::constant_pad_nd(x, {left, right, top, bottom});
    const std::vector<int64_t> bias_sizes{w.size(0)};
    const std::vector<int64_t> padding = symmetric ? std::vector<int64_t>{top, left} : std::vector<int64_t>{0, 0};
    auto [grad_x, grad_w, grad_bias] = at::convolution_backward(
        grads[0], padded_x, w, has_bias ? std::optional<at::IntArrayRef>(bias_sizes) : std::nullopt,
        {g[0], g[1]}, padding, {g[6], g[7]}, /*transposed=*/false, /*output_padding=*/{0, 0}, /*groups=*/1,
        {ctx->needs_input_grad(0), ctx->needs_input_grad(1), has_bias && ctx->needs_input_grad(2)});
    if (grad_x.defined() && !symmetric) {
      grad_x = grad_x.slice(2, top, top + x.size(2)).slice(3, left, left + x.size(3));
    }
    return {grad_x, grad_w, grad_bias, at::Tensor(), at::Tensor()};
  }
};

at::Tensor conv2d(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                  const std::vector<int64_t>& geometry, const py::object& forward_kernel) {
  TORCH_CHECK(geometry.size() == 8, "autoconv: the geometry has 8 numbers, got ", geometry.size());
  return Conv2dNode::apply(x, w, bias, geometry, forward_kernel);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("conv2d", &conv2d, "autoconv's convolution with a C++ autograd node (PyTorch's backward)");
}
