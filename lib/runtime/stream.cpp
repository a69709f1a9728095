// Streams, events and asynchronous copies of the public API
// (include/tiledsl/runtime.h): the checks that do not depend on the device
// (a stream or event of another device, an event never recorded, a copy
// larger than its buffer), around the DeviceImpl calls that do the work
// with the driver's handles.
#include "runtime/device.h"

namespace tl {

namespace {

detail::DeviceImpl& device_of(const std::shared_ptr<detail::DeviceImpl>& d) {
  if (!d) throw Error("empty tl::Device: get one with tl::Device::get()");
  return *d;
}
const detail::StreamImpl& stream_of(const std::shared_ptr<detail::StreamImpl>& s, const char* what) {
  if (!s) throw Error(std::string(what) + ": empty tl::Stream: make one with Device::create_stream or Stream::wrap");
  return *s;
}
detail::EventImpl& event_of(const std::shared_ptr<detail::EventImpl>& e, const char* what) {
  if (!e) throw Error(std::string(what) + ": empty tl::Event: make one with Device::create_event");
  return *e;
}
const detail::BufferImpl& buffer_of(const std::shared_ptr<detail::BufferImpl>& b) {
  if (!b) throw Error("empty tl::Buffer: allocate one with Device::alloc or Device::upload");
  return *b;
}

void check_same_device(const detail::DeviceImpl& want, const detail::DeviceImpl& found, const std::string& what,
                       const char* thing) {
  if (&want != &found)
    throw Error(what + ": expected " + thing + " of device '" + want.name() + "', found one of '" + found.name() +
                "'");
}

// The checks of an asynchronous copy of `bytes` between `b` and the host.
void check_async_copy(const detail::BufferImpl& b, const detail::StreamImpl& s, const void* host, size_t bytes,
                      const char* what, const char* direction) {
  b.check_host_copy(host, bytes, what, direction);
  check_same_device(*b.device, *s.device, what, "a stream");
}

}  // namespace

// ---------------------------------------------------------------------------
// Device

Stream Device::stream() const {
  auto& d = device_of(impl_);
  return Stream(std::make_shared<detail::StreamImpl>(impl_, d.default_stream(), false));
}

Stream Device::create_stream() {
  auto& d = device_of(impl_);
  return Stream(std::make_shared<detail::StreamImpl>(impl_, d.create_stream(), true));
}

Event Device::create_event() {
  device_of(impl_);
  return Event(std::make_shared<detail::EventImpl>(impl_));
}

// ---------------------------------------------------------------------------
// Stream

Stream Stream::wrap(const Device& device, void* native) {
  if (!device.impl())
    throw Error("Stream::wrap: expected a device, found an empty tl::Device (get one with tl::Device::get())");
  device.impl()->check_foreign_stream(native);
  return Stream(std::make_shared<detail::StreamImpl>(device.impl(), native, false));
}

Device Stream::device() const { return Device(stream_of(impl_, "Stream::device").device); }

void Stream::launch(const Kernel& k, Grid grid, const std::vector<Arg>& args, std::source_location where) const {
  // Device::launch names `where` for an empty stream before it asks for
  // the device.
  (impl_ ? device() : Device()).launch(k, grid, args, *this, where);
}

void* Stream::native() const {
  const auto& s = stream_of(impl_, "Stream::native");
  return s.device->addresses_are_device_pointers() ? s.native : nullptr;
}

void Stream::synchronize() const {
  const auto& s = stream_of(impl_, "Stream::synchronize");
  s.device->synchronize_stream(s.native);
}

void Stream::wait(const Event& event) const {
  const auto& s = stream_of(impl_, "Stream::wait");
  auto& e = event_of(event.impl(), "Stream::wait");
  check_same_device(*s.device, *e.device, "Stream::wait", "an event");
  // As with the GPU drivers' events, waiting for one never recorded waits
  // for nothing.
  if (e.recorded) s.device->wait_event(s.native, e.native);
}

// ---------------------------------------------------------------------------
// Event

void Event::record(const Stream& stream) {
  auto& e = event_of(impl_, "Event::record");
  const auto& s = stream_of(stream.impl(), "Event::record");
  check_same_device(*e.device, *s.device, "Event::record", "a stream");
  e.device->record_event(e.native, s.native);
  e.recorded = true;
}

void Event::synchronize() const {
  auto& e = event_of(impl_, "Event::synchronize");
  if (!e.recorded)
    throw Error("Event::synchronize: expected an event recorded on a stream (Event::record), found one never recorded");
  e.device->synchronize_event(e.native);
}

double Event::elapsed_ms(const Event& start, const Event& end) {
  auto& a = event_of(start.impl(), "Event::elapsed_ms");
  auto& b = event_of(end.impl(), "Event::elapsed_ms");
  check_same_device(*a.device, *b.device, "Event::elapsed_ms", "an end event");
  if (!a.recorded || !b.recorded)
    throw Error(std::string("Event::elapsed_ms: expected two recorded events, found the ") +
                (!a.recorded ? "start" : "end") + " event never recorded");
  return a.device->elapsed_ms(a.native, b.native);
}

// ---------------------------------------------------------------------------
// Buffer: asynchronous copies

void Buffer::copy_from_host_async(const void* src, size_t bytes, const Stream& stream) {
  const auto& b = buffer_of(impl());
  const auto& s = stream_of(stream.impl(), "Buffer::copy_from_host_async");
  check_async_copy(b, s, src, bytes, "Buffer::copy_from_host_async", "into");
  if (bytes) b.device->copy_to_device_async(b.address, src, bytes, s.native);
}

void Buffer::copy_to_host_async(void* dst, size_t bytes, const Stream& stream) const {
  const auto& b = buffer_of(impl());
  const auto& s = stream_of(stream.impl(), "Buffer::copy_to_host_async");
  check_async_copy(b, s, dst, bytes, "Buffer::copy_to_host_async", "out of");
  if (bytes) b.device->copy_to_host_async(dst, b.address, bytes, s.native);
}

}  // namespace tl
