// Linear layouts over GF(2); see linear_layout.h for the model.
//
// Inversion flattens the layout into a matrix whose columns are the input
// bits (each column the packed output bits of its basis vector) and runs
// Gaussian elimination; the earliest input bit that spans a new direction
// becomes a pivot, so a right inverse never uses a broadcast or duplicate bit.
// A repeat is a digit of its own: inversion and composition carry it beside
// the bits (an output dimension of size n * stride is, for the bits, one of
// size stride).
#include "ir/linear_layout.h"

#include <algorithm>
#include <bit>
#include <sstream>

#include "tiledsl/detail/ir_types.h"

namespace tl::ir {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw Error("linear layout: " + msg); }

bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

std::string coords_str(const LinearLayout::Coords& c) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < c.size(); ++i) s << (i ? "," : "") << c[i];
  s << ")";
  return s.str();
}

bool all_zero(const LinearLayout::Coords& c) {
  return std::all_of(c.begin(), c.end(), [](int32_t x) { return x == 0; });
}

// The output dimension a repeat's stride moves along (-1: none, it replicates).
int repeat_along(const LinearLayout::InDim& d) {
  for (size_t i = 0; i < d.repeat_stride.size(); ++i)
    if (d.repeat_stride[i] != 0) return int(i);
  return -1;
}

int log2_exact(int64_t n, const char* what) {
  if (n <= 0 || (n & (n - 1)) != 0) fail(std::string(what) + " must be a power of two, found " + std::to_string(n));
  return std::countr_zero(uint64_t(n));
}

// Packs coordinates into one integer: output dimension i at bit offset
// sum of the bit widths of dimensions before it (`sizes`: powers of two).
struct Packing {
  std::vector<int> offset, bits;
  int total = 0;
  explicit Packing(const std::vector<int32_t>& sizes) {
    for (int32_t size : sizes) {
      offset.push_back(total);
      bits.push_back(std::countr_zero(uint32_t(size)));
      total += bits.back();
    }
  }
  uint64_t pack(const LinearLayout::Coords& c) const {
    uint64_t v = 0;
    for (size_t i = 0; i < c.size(); ++i) v |= uint64_t(c[i]) << offset[i];
    return v;
  }
  // (output dimension, bit within it) of packed bit k.
  std::pair<int, int> locate(int k) const {
    for (size_t i = 0; i < offset.size(); ++i)
      if (k < offset[i] + bits[i]) return {int(i), k - offset[i]};
    return {-1, -1};
  }
};
}  // namespace

std::string dim_name(int d) { return "dim" + std::to_string(d); }

LinearLayout::LinearLayout(std::vector<InDim> ins, std::vector<OutDim> outs)
    : ins_(std::move(ins)), outs_(std::move(outs)) {
  for (const auto& o : outs_)
    if (o.size < 1) fail("size of output '" + o.name + "' must be at least 1, found " + std::to_string(o.size));
  // limit[i]: what the bits may reach along output i (a repeat's stride
  // where one moves along it, else the size).
  std::vector<int32_t> limit;
  for (const auto& o : outs_) limit.push_back(o.size);
  std::vector<bool> repeated(outs_.size(), false);
  for (auto& in : ins_) {
    if (in.repeat < 1) fail("the repeat of '" + in.name + "' must be at least 1, found " + std::to_string(in.repeat));
    if (in.repeat == 1) {
      if (!in.outer.empty()) fail("an outer repeat of '" + in.name + "' needs a repeat below it");
      in.repeat_stride.clear();
      continue;
    }
    if (in.repeat_stride.size() != outs_.size()) fail("the repeat of '" + in.name + "' has the wrong number of coordinates");
    int along = repeat_along(in);
    for (size_t i = 0; i < outs_.size(); ++i)
      if (in.repeat_stride[i] != 0 && (int(i) != along || !pow2(in.repeat_stride[i])))
        fail("the repeat of '" + in.name + "' must add a power of two along one output, found " +
             coords_str(in.repeat_stride));
    if (along >= 0 && int64_t(in.repeat) * in.repeat_stride[size_t(along)] > outs_[size_t(along)].size)
      fail("the repeat of '" + in.name + "' reaches " +
           std::to_string(int64_t(in.repeat) * in.repeat_stride[size_t(along)]) + " along output '" +
           outs_[size_t(along)].name + "' of size " + std::to_string(outs_[size_t(along)].size));
    // One form: a factor of two of the count is one more bit below it.
    while (in.repeat % 2 == 0) {
      in.bases.push_back(in.repeat_stride);
      in.repeat /= 2;
      for (auto& x : in.repeat_stride) x *= 2;
    }
    if (in.repeat == 1) {
      in.repeat_stride.clear();
    } else if (along >= 0) {
      if (repeated[size_t(along)]) fail("two repeats move along output '" + outs_[size_t(along)].name + "'");
      repeated[size_t(along)] = true;
      limit[size_t(along)] = in.repeat_stride[size_t(along)];
    }
    for (auto& [count, stride] : in.outer) {
      // Any count: a factor of two of it cannot be a bit, bits being below
      // the repeat (a [192, 128] buffer's two panels above its rows' 3).
      if (count < 2)
        fail("an outer repeat of '" + in.name + "' must have a count of at least 2, found " + std::to_string(count));
      if (stride.size() != outs_.size()) fail("an outer repeat of '" + in.name + "' has the wrong number of coordinates");
      int o = -1;
      for (size_t i = 0; i < stride.size(); ++i)
        if (stride[i] != 0) o = o < 0 && pow2(stride[i]) ? int(i) : -2;
      if (o < 0) fail("an outer repeat of '" + in.name + "' must add a power of two along one output, found " + coords_str(stride));
      if (int64_t(count) * stride[size_t(o)] != outs_[size_t(o)].size)
        fail("an outer repeat of '" + in.name + "' must reach the size of output '" + outs_[size_t(o)].name + "'");
      if (repeated[size_t(o)]) fail("two repeats move along output '" + outs_[size_t(o)].name + "'");
      repeated[size_t(o)] = true;
      limit[size_t(o)] = stride[size_t(o)];
    }
  }
  for (const auto& in : ins_)
    for (const auto& b : in.bases) {
      if (b.size() != outs_.size()) fail("a basis of '" + in.name + "' has the wrong number of coordinates");
      for (size_t i = 0; i < b.size(); ++i)
        if (b[i] < 0 || b[i] >= limit[i])
          fail("a basis of '" + in.name + "' leaves output '" + outs_[i].name + "' (" +
               (limit[i] < outs_[i].size ? "below its repeat's stride " : "size ") + std::to_string(limit[i]) +
               "), found " + std::to_string(b[i]));
    }
}

LinearLayout LinearLayout::repeat(const std::string& in, int32_t n, const std::string& out) {
  return LinearLayout({InDim{in, {}, n, {1}}}, {{out, n}});
}

LinearLayout LinearLayout::identity(const std::string& in, int32_t size, const std::string& out) {
  int bits = log2_exact(size, "identity size");
  InDim d{in, {}};
  for (int i = 0; i < bits; ++i) d.bases.push_back({int32_t(1) << i});
  return LinearLayout({d}, {{out, size}});
}

LinearLayout LinearLayout::zeros(const std::string& in, int32_t size, const std::string& out) {
  int bits = log2_exact(size, "zeros size");
  InDim d{in, std::vector<Coords>(bits, Coords{0})};
  return LinearLayout({d}, {{out, 1}});
}

int LinearLayout::out_index(const std::string& out) const {
  for (size_t i = 0; i < outs_.size(); ++i)
    if (outs_[i].name == out) return int(i);
  return -1;
}

const std::vector<LinearLayout::Coords>& LinearLayout::bases(const std::string& in) const {
  static const std::vector<Coords> none;
  for (const auto& d : ins_)
    if (d.name == in) return d.bases;
  return none;
}

int LinearLayout::in_bits(const std::string& in) const {
  for (const auto& d : ins_)
    if (d.name == in) return int(d.bases.size());
  return 0;
}

int32_t LinearLayout::repeat_count(const std::string& in) const {
  for (const auto& d : ins_)
    if (d.name == in) {
      int32_t n = d.repeat;
      for (const auto& o : d.outer) n *= o.first;
      return n;
    }
  return 1;
}

void LinearLayout::refuse_outer(const char* op) const {
  for (const auto& d : ins_)
    if (!d.outer.empty()) fail(std::string(op) + ": a layout with more than one repeat of '" + d.name + "' is not supported");
}

int32_t LinearLayout::out_size(const std::string& out) const {
  int i = out_index(out);
  return i < 0 ? 1 : outs_[i].size;
}

int LinearLayout::total_in_bits() const {
  int n = 0;
  for (const auto& d : ins_) n += int(d.bases.size());
  return n;
}

int LinearLayout::total_out_bits() const {
  int n = 0;
  for (const auto& o : outs_) n += std::bit_width(uint32_t(o.size - 1));
  return n;
}

LinearLayout LinearLayout::operator*(const LinearLayout& rhs) const {
  refuse_outer("product");
  rhs.refuse_outer("product");
  // Output dimensions: ours, then rhs's new ones. A shared one multiplies.
  std::vector<OutDim> outs = outs_;
  std::vector<int> rhs_map, rhs_shift;
  for (const auto& o : rhs.outs_) {
    int i = out_index(o.name);
    if (i < 0) {
      rhs_map.push_back(int(outs.size()));
      rhs_shift.push_back(0);
      outs.push_back(o);
    } else {
      if (!pow2(outs_[i].size) && o.size > 1)
        fail("product: output '" + o.name + "' of the left operand has size " + std::to_string(outs_[i].size) +
             ", not a power of two: the right operand's coordinates cannot go above it");
      rhs_map.push_back(i);
      rhs_shift.push_back(std::countr_zero(uint32_t(outs_[i].size)));
      outs[i].size *= o.size;
    }
  }
  auto widen_lhs = [&](const Coords& c) {
    Coords r(outs.size(), 0);
    std::copy(c.begin(), c.end(), r.begin());
    return r;
  };
  auto widen_rhs = [&](const Coords& c) {
    Coords r(outs.size(), 0);
    for (size_t i = 0; i < c.size(); ++i) r[rhs_map[i]] = c[i] << rhs_shift[i];
    return r;
  };
  std::vector<InDim> ins;
  for (const auto& d : ins_) {
    InDim n{d.name, {}, d.repeat, d.repeat > 1 ? widen_lhs(d.repeat_stride) : Coords{}};
    for (const auto& b : d.bases) n.bases.push_back(widen_lhs(b));
    ins.push_back(std::move(n));
  }
  for (const auto& d : rhs.ins_) {
    auto it = std::find_if(ins.begin(), ins.end(), [&](const InDim& x) { return x.name == d.name; });
    if (it == ins.end()) it = ins.insert(ins.end(), InDim{d.name, {}});
    if (it->repeat > 1 && (!d.bases.empty() || d.repeat > 1))
      fail("product: the repeat of '" + d.name + "' must stay its highest digit, found more of '" + d.name +
           "' on the right");
    for (const auto& b : d.bases) it->bases.push_back(widen_rhs(b));
    if (d.repeat > 1) it->repeat = d.repeat, it->repeat_stride = widen_rhs(d.repeat_stride);
  }
  return LinearLayout(std::move(ins), std::move(outs));
}

LinearLayout::Coords LinearLayout::apply(const std::vector<std::pair<std::string, int32_t>>& in) const {
  Coords r(outs_.size(), 0);
  for (const auto& [name, value] : in) {
    auto it = std::find_if(ins_.begin(), ins_.end(), [&](const InDim& d) { return d.name == name; });
    if (it == ins_.end()) {
      if (value != 0) fail("no input dimension '" + name + "'");
      continue;
    }
    if (value < 0 || value >= in_size(name)) fail("input '" + name + "' out of range: " + std::to_string(value));
    for (size_t bit = 0; bit < it->bases.size(); ++bit)
      if (value & (1 << bit))
        for (size_t i = 0; i < r.size(); ++i) r[i] ^= it->bases[bit][i];
    // The repeat adds multiples of a stride the bits stay below; outer
    // repeats are the next digits of mixed radix.
    if (int32_t t = value >> it->bases.size()) {
      for (size_t i = 0; i < r.size(); ++i) r[i] += t % it->repeat * it->repeat_stride[i];
      t /= it->repeat;
      for (const auto& [count, stride] : it->outer) {
        for (size_t i = 0; i < r.size(); ++i) r[i] += t % count * stride[i];
        t /= count;
      }
    }
  }
  return r;
}

LinearLayout LinearLayout::compose(const LinearLayout& outer) const {
  refuse_outer("compose");
  outer.refuse_outer("compose");
  for (const auto& o : outs_) {
    if (outer.in_bits(o.name) == 0 && o.size > 1) fail("compose: outer layout has no input '" + o.name + "'");
    if (o.size > outer.in_size(o.name))
      fail("compose: output '" + o.name + "' (size " + std::to_string(o.size) + ") exceeds the outer input size " +
           std::to_string(outer.in_size(o.name)));
  }
  auto through = [&](const Coords& c) {
    std::vector<std::pair<std::string, int32_t>> args;
    for (size_t i = 0; i < outs_.size(); ++i) args.emplace_back(outs_[i].name, c[i]);
    return outer.apply(args);
  };
  std::vector<InDim> ins;
  for (const auto& d : ins_) {
    InDim n{d.name, {}};
    for (const auto& b : d.bases) n.bases.push_back(through(b));
    if (d.repeat > 1) {
      // t * stride must land on t times one step of outer's.
      Coords step = through(d.repeat_stride);
      for (int32_t t = 2; t < d.repeat; ++t) {
        Coords c = d.repeat_stride, want = step;
        for (auto& x : c) x *= t;
        for (auto& x : want) x *= t;
        if (through(c) != want)
          fail("compose: the repeat of '" + d.name + "' (" + std::to_string(d.repeat) + " x " +
               coords_str(d.repeat_stride) + ") is not a repeat of the outer layout's outputs");
      }
      n.repeat = d.repeat, n.repeat_stride = step;
    }
    ins.push_back(std::move(n));
  }
  return LinearLayout(std::move(ins), outer.outs_);
}

std::optional<LinearLayout> LinearLayout::invert() const {
  // Mixed-radix digits have no inverse of this form.
  for (const auto& d : ins_)
    if (!d.outer.empty()) return std::nullopt;
  // The bits cover each output up to its repeat's stride; the repeat the
  // rest, exactly, or the layout is not surjective.
  std::vector<int32_t> sizes;
  std::vector<int> repeat_of(outs_.size(), -1);
  for (size_t j = 0; j < ins_.size(); ++j)
    if (int along = repeat_along(ins_[j]); along >= 0) repeat_of[size_t(along)] = int(j);
  for (size_t i = 0; i < outs_.size(); ++i) {
    const InDim* r = repeat_of[i] < 0 ? nullptr : &ins_[size_t(repeat_of[i])];
    if (r && outs_[i].size != r->repeat * r->repeat_stride[i]) return std::nullopt;
    if (!r && !pow2(outs_[i].size)) return std::nullopt;
    sizes.push_back(r ? r->repeat_stride[i] : outs_[i].size);
  }
  Packing pack(sizes);
  if (pack.total > 63 || total_in_bits() > 63) fail("invert: more than 63 bits");
  // Columns in input order: (packed image, which input bits produce it).
  struct Pivot {
    uint64_t image, inputs;
    int lead;
  };
  std::vector<Pivot> pivots;
  auto reduce = [&](uint64_t& image, uint64_t& inputs) {
    // Pivots are kept sorted by leading bit, descending; each XOR only
    // touches bits at or below the pivot's leading bit.
    for (const auto& p : pivots)
      if (image >> p.lead & 1) image ^= p.image, inputs ^= p.inputs;
  };
  int flat = 0;
  for (const auto& d : ins_)
    for (const auto& b : d.bases) {
      uint64_t image = pack.pack(b), inputs = uint64_t(1) << flat++;
      reduce(image, inputs);
      if (image == 0) continue;  // broadcast or duplicate bit
      Pivot p{image, inputs, 63 - std::countl_zero(image)};
      pivots.insert(std::upper_bound(pivots.begin(), pivots.end(), p,
                                     [](const Pivot& a, const Pivot& b) { return a.lead > b.lead; }),
                    p);
    }
  if (int(pivots.size()) < pack.total) return std::nullopt;  // not surjective

  // Inverse: inputs are our outputs, outputs are our inputs.
  std::vector<OutDim> inv_outs;
  for (const auto& d : ins_) inv_outs.push_back({d.name, in_size(d.name)});
  std::vector<InDim> inv_ins;
  for (size_t i = 0; i < outs_.size(); ++i) {
    inv_ins.push_back({outs_[i].name, {}});
    if (int j = repeat_of[i]; j >= 0) {  // t strides of ours: t above input j's bits
      inv_ins.back().repeat = ins_[size_t(j)].repeat;
      inv_ins.back().repeat_stride.assign(ins_.size(), 0);
      inv_ins.back().repeat_stride[size_t(j)] = int32_t(1) << ins_[size_t(j)].bases.size();
    }
  }
  for (int k = 0; k < pack.total; ++k) {
    uint64_t image = uint64_t(1) << k, inputs = 0;
    reduce(image, inputs);
    // Unpack `inputs` (flat input bits) into per-dimension values.
    Coords c(ins_.size(), 0);
    int bit = 0;
    for (size_t i = 0; i < ins_.size(); ++i)
      for (size_t j = 0; j < ins_[i].bases.size(); ++j, ++bit)
        if (inputs >> bit & 1) c[i] |= int32_t(1) << j;
    inv_ins[pack.locate(k).first].bases.push_back(c);
  }
  return LinearLayout(std::move(inv_ins), std::move(inv_outs));
}

std::optional<LinearLayout> LinearLayout::invert_and_compose(const LinearLayout& dst) const {
  for (const auto& o : outs_)
    if (dst.out_size(o.name) != o.size)
      fail("invert_and_compose: output '" + o.name + "' has size " + std::to_string(o.size) + " here and " +
           std::to_string(dst.out_size(o.name)) + " in the destination");
  auto inv = dst.invert();
  if (!inv) return std::nullopt;
  return compose(*inv);
}

uint32_t LinearLayout::broadcast_mask(const std::string& in) const {
  uint32_t m = 0;
  for (const auto& d : ins_)
    if (d.name == in)
      for (size_t i = 0; i < d.bases.size(); ++i)
        if (all_zero(d.bases[i])) m |= 1u << i;
  return m;
}

LinearLayout LinearLayout::remove_broadcast(const std::string& in) const {
  refuse_outer("remove_broadcast");
  auto ins = ins_;
  for (auto& d : ins)
    if (d.name == in) {
      std::erase_if(d.bases, all_zero);
      if (d.repeat > 1 && all_zero(d.repeat_stride)) d.repeat = 1;
    }
  return LinearLayout(std::move(ins), outs_);
}

bool LinearLayout::constant_along(const std::string& in, int out) const {
  for (const auto& d : ins_)
    if (d.name == in) {
      for (const auto& b : d.bases)
        if (b[out] != 0) return false;
      if (d.repeat > 1 && d.repeat_stride[size_t(out)] != 0) return false;
      for (const auto& o : d.outer)
        if (o.second[size_t(out)] != 0) return false;
    }
  return true;
}

int32_t LinearLayout::contiguous_run(const std::string& in, int out, int32_t stride) const {
  for (const auto& d : ins_) {
    if (d.name != in) continue;
    int k = 0;
    for (; k < int(d.bases.size()); ++k) {
      const auto& b = d.bases[k];
      bool unit = b[out] == (stride << k);
      for (size_t i = 0; i < b.size() && unit; ++i)
        if (int(i) != out && b[i] != 0) unit = false;
      if (!unit) break;
    }
    return int32_t(1) << k;
  }
  return 1;
}

LinearLayout LinearLayout::slice(int out) const {
  refuse_outer("slice");
  if (out < 0 || out >= int(outs_.size())) fail("slice: no output dimension " + std::to_string(out));
  std::vector<OutDim> outs = outs_;
  outs.erase(outs.begin() + out);
  // A tile's dimensions are named by position (dim0, dim1, ...): those
  // after the removed one move down a place, as the tile's shape does.
  for (size_t i = size_t(out); i < outs.size(); ++i)
    if (outs[i].name == dim_name(int(i) + 1)) outs[i].name = dim_name(int(i));
  std::vector<InDim> ins;
  for (const auto& d : ins_) {
    InDim n{d.name, {}, d.repeat, d.repeat_stride};
    if (n.repeat > 1) {
      n.repeat_stride.erase(n.repeat_stride.begin() + out);
      if (d.name == kReg && all_zero(n.repeat_stride)) n.repeat = 1;  // registers that repeat nothing
    }
    for (auto b : d.bases) {
      b.erase(b.begin() + out);
      bool zero = all_zero(b);
      // A register that now repeats another register (or nothing) is dropped.
      if (d.name == kReg && (zero || std::find(n.bases.begin(), n.bases.end(), b) != n.bases.end())) continue;
      n.bases.push_back(std::move(b));
    }
    ins.push_back(std::move(n));
  }
  return LinearLayout(std::move(ins), std::move(outs));
}

LinearLayout LinearLayout::rename_in(const std::string& from, const std::string& to) const {
  auto ins = ins_;
  for (auto& d : ins)
    if (d.name == from) d.name = to;
  return LinearLayout(std::move(ins), outs_);
}

bool LinearLayout::operator==(const LinearLayout& o) const {
  if (outs_.size() != o.outs_.size() || ins_.size() != o.ins_.size()) return false;
  for (size_t i = 0; i < outs_.size(); ++i)
    if (outs_[i].name != o.outs_[i].name || outs_[i].size != o.outs_[i].size) return false;
  for (size_t i = 0; i < ins_.size(); ++i)
    if (ins_[i].name != o.ins_[i].name || ins_[i].bases != o.ins_[i].bases || ins_[i].repeat != o.ins_[i].repeat ||
        ins_[i].repeat_stride != o.ins_[i].repeat_stride || ins_[i].outer != o.ins_[i].outer)
      return false;
  return true;
}

std::string LinearLayout::str() const {
  std::ostringstream s;
  for (const auto& d : ins_) {
    s << d.name << ": [";
    for (size_t i = 0; i < d.bases.size(); ++i) {
      s << (i ? ", " : "") << "(";
      for (size_t j = 0; j < d.bases[i].size(); ++j) s << (j ? "," : "") << d.bases[i][j];
      s << ")";
    }
    if (d.repeat > 1) s << (d.bases.empty() ? "" : "; ") << d.repeat << " x " << coords_str(d.repeat_stride);
    for (const auto& [count, stride] : d.outer) s << ", " << count << " x " << coords_str(stride);
    s << "] ";
  }
  s << "->";
  for (const auto& o : outs_) s << " " << o.name << ":" << o.size;
  return s.str();
}

namespace {
// Reorders output dimensions to dim0, dim1, ... (products build them in
// `order`, fastest first).
LinearLayout canonical_outs(const LinearLayout& l, int rank) {
  std::vector<LinearLayout::OutDim> outs;
  std::vector<int> from;
  for (int d = 0; d < rank; ++d) {
    int i = l.out_index(dim_name(d));
    outs.push_back({dim_name(d), i < 0 ? 1 : l.out_dims()[i].size});
    from.push_back(i);
  }
  auto reorder = [&](const LinearLayout::Coords& b) {
    LinearLayout::Coords c(rank, 0);
    for (int k = 0; k < rank; ++k)
      if (from[k] >= 0) c[k] = b[from[k]];
    return c;
  };
  std::vector<LinearLayout::InDim> ins;
  for (const auto& d : l.in_dims()) {
    LinearLayout::InDim n{d.name, {}, d.repeat, d.repeat > 1 ? reorder(d.repeat_stride) : LinearLayout::Coords{}};
    for (const auto& b : d.bases) n.bases.push_back(reorder(b));
    for (const auto& [count, stride] : d.outer) n.outer.push_back({count, reorder(stride)});
    ins.push_back(std::move(n));
  }
  return LinearLayout(std::move(ins), std::move(outs));
}

void check_rank(size_t rank, size_t n, const char* what) {
  if (n != rank) fail(std::string(what) + " has " + std::to_string(n) + " entries, the shape has rank " + std::to_string(rank));
}
}  // namespace

namespace {
LinearLayout blocked_pow2(const std::vector<int64_t>& shape, const std::vector<int>& size_per_thread,
                          const std::vector<int>& threads_per_warp, const std::vector<int>& warps_per_block,
                          const std::vector<int>& order, const std::vector<int>& ctas_per_cluster) {
  size_t rank = shape.size();
  check_rank(rank, size_per_thread.size(), "size_per_thread");
  check_rank(rank, threads_per_warp.size(), "threads_per_warp");
  check_rank(rank, warps_per_block.size(), "warps_per_block");
  check_rank(rank, order.size(), "order");
  LinearLayout regs, lanes, warps;
  for (int d : order) {
    regs = regs * LinearLayout::identity(kReg, size_per_thread[d], dim_name(d));
    lanes = lanes * LinearLayout::identity(kLane, threads_per_warp[d], dim_name(d));
    warps = warps * LinearLayout::identity(kWarp, warps_per_block[d], dim_name(d));
  }
  LinearLayout l = regs * lanes * warps;
  // Larger tiles repeat in registers (fastest dimension's repeats first),
  // below the CTAs' bits: each CTA of a cluster holds a contiguous part.
  auto ctas = [&](int d) { return ctas_per_cluster.empty() ? 1 : ctas_per_cluster[d]; };
  for (int d : order) {
    int64_t cover = l.out_size(dim_name(d)) * ctas(d);
    log2_exact(shape[d], "tile dimension");
    if (shape[d] > cover) l = l * LinearLayout::identity(kReg, int32_t(shape[d] / cover), dim_name(d));
  }
  if (!ctas_per_cluster.empty()) {
    check_rank(rank, ctas_per_cluster.size(), "ctas_per_cluster");
    LinearLayout blocks;
    for (int d : order) blocks = blocks * LinearLayout::identity(kBlock, ctas(d), dim_name(d));
    l = l * blocks;
  }
  // Smaller tiles broadcast: bases that would leave the tile become zero.
  std::vector<LinearLayout::InDim> ins = l.in_dims();
  std::vector<LinearLayout::OutDim> outs = l.out_dims();
  for (size_t i = 0; i < outs.size(); ++i) {
    int d = std::stoi(outs[i].name.substr(3));
    if (outs[i].size <= shape[d]) continue;
    outs[i].size = int32_t(shape[d]);
    for (auto& in : ins)
      for (auto& b : in.bases)
        if (b[i] >= shape[d]) b[i] = 0;
  }
  return canonical_outs(LinearLayout(std::move(ins), std::move(outs)), int(rank));
}
}  // namespace

LinearLayout blocked_layout(const std::vector<int64_t>& shape, const std::vector<int>& size_per_thread,
                            const std::vector<int>& threads_per_warp, const std::vector<int>& warps_per_block,
                            const std::vector<int>& order, const std::vector<int>& ctas_per_cluster) {
  // A dimension c x 2^k (c odd) is laid out as 2^k, then repeated c times
  // in registers above everything else: registers carry one repeat.
  std::vector<int64_t> pow2 = shape;
  int odd_dim = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1) fail("tile dimension " + std::to_string(shape[d]) + " is not positive");
    pow2[d] = pow2_part(shape[d]);
    if (pow2[d] == shape[d]) continue;
    if (odd_dim >= 0)
      fail("a blocked layout repeats one dimension that is not a power of two, found " + std::to_string(shape[size_t(odd_dim)]) +
           " and " + std::to_string(shape[d]));
    odd_dim = int(d);
  }
  LinearLayout l = blocked_pow2(pow2, size_per_thread, threads_per_warp, warps_per_block, order, ctas_per_cluster);
  if (odd_dim < 0) return l;
  if (l.in_size(kBlock) > 1) fail("a blocked layout over CTAs repeats no dimension, found " + std::to_string(shape[size_t(odd_dim)]));
  return canonical_outs(l * LinearLayout::repeat(kReg, int32_t(shape[size_t(odd_dim)] / pow2[size_t(odd_dim)]), dim_name(odd_dim)),
                        int(shape.size()));
}

LinearLayout swizzled_shared_layout(const std::vector<int64_t>& shape, int vec, int per_phase, int max_phase,
                                    const std::vector<int>& order) {
  if (shape.size() != 2) fail("swizzled shared layouts are 2-D, found rank " + std::to_string(shape.size()));
  check_rank(2, order.size(), "order");
  int fast = order[0], slow = order[1];
  int fast_bits = log2_exact(shape[fast], "tile dimension");
  int slow_bits = log2_exact(shape[slow], "tile dimension");
  int vec_bits = log2_exact(vec, "vec"), phase_shift = log2_exact(per_phase, "per_phase");
  int phase_bits = log2_exact(max_phase, "max_phase");
  if (vec_bits + phase_bits > fast_bits) phase_bits = std::max(0, fast_bits - vec_bits);
  LinearLayout::InDim off{kOffset, {}};
  for (int i = 0; i < fast_bits; ++i) {
    LinearLayout::Coords c(2, 0);
    c[fast] = int32_t(1) << i;
    off.bases.push_back(c);
  }
  for (int j = 0; j < slow_bits; ++j) {
    LinearLayout::Coords c(2, 0);
    c[slow] = int32_t(1) << j;
    int p = j - phase_shift;  // which phase bit row bit j sets
    if (p >= 0 && p < phase_bits) c[fast] = int32_t(1) << (p + vec_bits);
    off.bases.push_back(c);
  }
  return LinearLayout({off}, {{dim_name(0), int32_t(shape[0])}, {dim_name(1), int32_t(shape[1])}});
}

}  // namespace tl::ir
