// DLPack in and out (tl::from_dlpack, Buffer::to_dlpack): a tensor of
// another library (PyTorch, CuPy, JAX, ...) viewed as a tl::Buffer without
// a copy, and a tl::Buffer handed out as a DLManagedTensor. DLPack's header
// is Debian's libdlpack-dev (version 0.6: DLManagedTensor, no versioned
// tensor, no bool or float8 type codes), included here and by the device
// registry's entries (each names its DLPack device type), so that the
// public header needs no DLPack.
//
// Ownership follows DLPack: from_dlpack takes the tensor when it succeeds
// and calls its deleter when the last Buffer viewing it goes away; the
// tensor to_dlpack makes holds its Buffer until the consumer calls the
// deleter.
#include <dlpack/dlpack.h>

#include "runtime/device.h"

namespace tl {

namespace {

// The DLPack type of `t`; false for types DLPack 0.6 cannot express.
bool to_dl_type(DType t, DLDataType& out) {
  out.lanes = 1;
  out.bits = uint8_t(bit_width(t));
  switch (t) {
    case DType::i8: case DType::i16: case DType::i32: case DType::i64: out.code = kDLInt; return true;
    case DType::u8: case DType::u16: case DType::u32: case DType::u64: out.code = kDLUInt; return true;
    case DType::f16: case DType::f32: case DType::f64: out.code = kDLFloat; return true;
    case DType::bf16: out.code = kDLBfloat; return true;
    case DType::i1: case DType::f8e4m3: case DType::f8e5m2: return false;
  }
  return false;
}

// The tiledsl type of a one-lane DLPack type; false when there is none.
bool from_dl_type(DLDataType dl, DType& out) {
  for (DType t : {DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u16, DType::u32, DType::u64, DType::f16,
                  DType::f32, DType::f64, DType::bf16}) {
    DLDataType d{};
    to_dl_type(t, d);
    if (d.code == dl.code && d.bits == dl.bits) {
      out = t;
      return true;
    }
  }
  return false;
}

std::string describe_dl_type(DLDataType t) {
  const char* code = t.code == kDLInt      ? "kDLInt"
                     : t.code == kDLUInt   ? "kDLUInt"
                     : t.code == kDLFloat  ? "kDLFloat"
                     : t.code == kDLBfloat ? "kDLBfloat"
                     : t.code == kDLComplex ? "kDLComplex"
                     : t.code == kDLOpaqueHandle ? "kDLOpaqueHandle"
                                                 : nullptr;
  std::string s = code ? code : "type code " + std::to_string(t.code);
  s += " of " + std::to_string(t.bits) + " bits";
  if (t.lanes != 1) s += " x " + std::to_string(t.lanes) + " lanes";
  return s;
}

std::string describe_dl_device(DLDevice d) {
  const char* type = d.device_type == kDLCPU           ? "kDLCPU"
                     : d.device_type == kDLCUDA        ? "kDLCUDA"
                     : d.device_type == kDLCUDAHost    ? "kDLCUDAHost"
                     : d.device_type == kDLCUDAManaged ? "kDLCUDAManaged"
                     : d.device_type == kDLROCM        ? "kDLROCM"
                     : d.device_type == kDLROCMHost    ? "kDLROCMHost"
                                                       : nullptr;
  return (type ? std::string(type) : "device type " + std::to_string(int(d.device_type))) + " device " +
         std::to_string(d.device_id);
}

std::string shape_str(const DLTensor& t, const int64_t* v) {
  std::string s = "[";
  for (int i = 0; i < t.ndim; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// What to_dlpack's tensors point to: the tensor itself (first, so the
// DLManagedTensor* is the context too), its shape and strides, and the
// buffer it keeps alive.
struct Exported {
  DLManagedTensor tensor{};
  int64_t shape[1] = {0};
  int64_t strides[1] = {1};
  std::shared_ptr<detail::BufferImpl> buffer;
};

}  // namespace

Buffer from_dlpack(DLManagedTensor* managed, std::source_location where) {
  std::string at = ir::Loc{where.file_name(), int(where.line())}.str() + ": from_dlpack: ";
  if (!managed) throw Error(at + "expected a DLManagedTensor, found a null pointer");
  const DLTensor& t = managed->dl_tensor;

  // The device the tensor lives on: the kind whose registry entry takes
  // its DLPack device type (runtime/device.h), and its index.
  std::string kind = detail::device_kind_of_dlpack(int(t.device.device_type));
  if (kind.empty())
    throw Error(at + "expected a tensor on kDLCPU (the interpreter), kDLCUDA or kDLROCM, found one on " +
                describe_dl_device(t.device));
  std::string name = t.device.device_type == kDLCPU ? kind : kind + ":" + std::to_string(t.device.device_id);
  if (t.device.device_type == kDLCPU && t.device.device_id != 0)
    throw Error(at + "expected a kDLCPU tensor of device 0, found " + describe_dl_device(t.device));
  Device device;
  try {
    device = Device::get(name);
  } catch (const Error& e) {
    throw Error(at + "the tensor is on " + describe_dl_device(t.device) + ": " + e.what());
  }

  DType dtype;
  if (t.dtype.lanes != 1 || !from_dl_type(t.dtype, dtype))
    throw Error(at + "expected a tensor of one lane of i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32 or f64, "
                "found " + describe_dl_type(t.dtype));

  // Contiguous, row-major: each stride the product of the sizes after it
  // (a dimension of size 1 may have any stride).
  if (t.ndim < 0) throw Error(at + "expected ndim >= 0, found " + std::to_string(t.ndim));
  if (t.ndim > 0 && !t.shape) throw Error(at + "expected a shape for " + std::to_string(t.ndim) + " dimensions, found none");
  size_t count = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) throw Error(at + "expected sizes >= 0, found shape " + shape_str(t, t.shape));
    if (t.shape[i] > 0 && count > SIZE_MAX / size_t(t.shape[i]))
      throw Error(at + "the element count of shape " + shape_str(t, t.shape) + " does not fit in size_t");
    count *= size_t(t.shape[i]);
  }
  if (t.strides && count > 0) {
    int64_t want = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != want)
        throw Error(at + "expected a contiguous row-major tensor, found shape " + shape_str(t, t.shape) +
                    " with strides " + shape_str(t, t.strides) + " (dimension " + std::to_string(i) + " has stride " +
                    std::to_string(t.strides[i]) + ", contiguous is " + std::to_string(want) +
                    "; make it contiguous first)");
      want *= t.shape[i];
    }
  }

  std::shared_ptr<detail::BufferImpl> impl;
  if (count == 0) {
    // Nothing to view (an empty tensor's data may be null): an empty buffer
    // of tiledsl's own, which still gives the tensor back when it goes.
    impl = std::make_shared<detail::BufferImpl>(device.impl(), dtype, 0);
  } else {
    if (!t.data) throw Error(at + "expected the data of " + std::to_string(count) + " elements, found a null pointer");
    void* data = static_cast<char*>(t.data) + t.byte_offset;
    try {
      impl = std::make_shared<detail::BufferImpl>(device.impl(), dtype, count, data);
    } catch (const Error& e) {
      throw Error(at + e.what());
    }
  }
  // Taken: from here on the buffer owns the tensor.
  impl->on_release = [managed] {
    if (managed->deleter) managed->deleter(managed);
  };
  return Buffer(std::move(impl));
}

DLManagedTensor* Buffer::to_dlpack() const {
  if (!impl_) throw Error("Buffer::to_dlpack: empty tl::Buffer: allocate one with Device::alloc or Device::upload");
  const detail::BufferImpl& b = *impl_;
  DLDataType type{};
  if (!to_dl_type(b.dtype, type))
    throw Error("Buffer::to_dlpack: expected a buffer of a type DLPack 0.6 has (integers, f16, bf16, f32, f64), "
                "found " + std::string(dtype_name(b.dtype)));
  DLDevice device{};
  int device_type = detail::dlpack_device_type_of(b.device->name().substr(0, b.device->name().find(':')));
  device.device_type = DLDeviceType(device_type);
  if (device_type == 0)
    throw Error("Buffer::to_dlpack: expected a buffer of the interpreter or a GPU, found one of device '" +
                b.device->name() + "'");
  device.device_id = b.device->index();

  auto out = std::make_unique<Exported>();
  out->buffer = impl_;
  out->shape[0] = int64_t(b.size);
  DLTensor& t = out->tensor.dl_tensor;
  t.data = b.size == 0 ? nullptr : b.device->data_pointer(b.address, b.bytes());
  t.device = device;
  t.ndim = 1;
  t.dtype = type;
  t.shape = out->shape;
  t.strides = out->strides;
  t.byte_offset = 0;
  out->tensor.manager_ctx = out.get();
  out->tensor.deleter = [](DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); };
  return &out.release()->tensor;
}

}  // namespace tl
