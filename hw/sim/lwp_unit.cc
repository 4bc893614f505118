// Implements the simulator's LWP unit (see lwp_unit.h).
#include "hw/sim/lwp_unit.h"

#include <algorithm>
#include <cmath>

namespace resctrlfs::hw::sim {

namespace {

// Ring buffers the simulator is willing to hold per thread (ours: the
// hardware's limit is BufferSize's 28 bits).
constexpr uint32_t kMaxBufferBytes = 16U << 20;
constexpr uint64_t kCodeBase = 0x400000;  // where the model's instructions live

Error inval(std::string m) { return Error::make(EINVAL, std::move(m)); }

}  // namespace

x86::LwpCaps sim_lwp_caps(lwp::Generation g) {
  x86::LwpCaps c;
  c.present = true;
  c.generation = g;
  c.event_size = lwp::kRecordSize;
  c.latency_max_bits = 12;
  c.data_address = true;
  c.branch_prediction = true;
  c.cache_levels = true;
  c.cache_latency = true;
  c.event_offset = lwp::kLwpcbHeaderSize;
  x86::LwpFeatureBits f;
  f.gen = g;
  f.avail = f.ire = f.bre = f.dme = f.interrupt = true;
  if (g == lwp::Generation::kProposal) {
    c.max_events = 3;
    c.version = 1;
  } else {
    f.val = true;
    c.max_events = 4;
    c.version = 1;
    c.min_buffer_records = 32;
  }
  c.cb_size_bytes = static_cast<unsigned>(lwp::lwpcb_size(c.max_events));
  f.raw = f.mask();
  c.enabled = f;
  x86::LwpFeatureBits caps = f;
  caps.caps_layout = g == lwp::Generation::kProposal;
  caps.raw = caps.encode();
  c.supported = caps;
  c.raw = c.encode();
  return c;
}

LwpUnit::LwpUnit(x86::LwpCaps caps, uint64_t lwp_cfg, uint64_t seed)
    : caps_(std::move(caps)), cfg_(lwp_cfg), rng_(seed) {}

void LwpUnit::set_core_id(uint8_t core) {
  cfg_ = (cfg_ & ~(uint64_t{0xFF} << 32)) | (uint64_t{core} << 32);
}

uint32_t LwpUnit::reload(uint32_t interval) {
  uint32_t v = interval & lwp::kCounterMask;
  const unsigned r = std::min<unsigned>(cb_.random, lwp::kCounterBits);
  if (r > 0) {
    const uint32_t mask = (1U << r) - 1;
    v = (v & ~mask) | (static_cast<uint32_t>(rng_()) & mask);
  }
  return v;
}

LwpUnit::Slot* LwpUnit::slot_of(uint8_t id) {
  if (id == 0) return nullptr;  // an unused slot is not an event
  for (auto& s : slots_)
    if (s.id == id) return &s;
  return nullptr;
}

uint64_t LwpUnit::pick_ip() { return kCodeBase + (rng_() % 0x10000); }

Result<std::optional<lwp::Lwpcb>> LwpUnit::llwpcb(std::optional<lwp::Lwpcb> in) {
  if (in) {
    const lwp::Lwpcb& cb = *in;
    const uint32_t es = caps_.event_size;
    // LLWPCB raises #UD while LWP_CFG (the proposal's LWPMSR0) has LWP off.
    if ((cfg_ & 1) == 0 || !caps_.supported.avail)
      return Error::make(EPERM, "LWP is not enabled in LWP_CFG of this CPU (LLWPCB raises #UD)");
    if (cb.buffer_size == 0 || cb.buffer_size % es != 0)
      return inval("BufferSize must be a non-zero multiple of " + std::to_string(es));
    if (cb.buffer_size < caps_.min_buffer_records * es)
      return inval("BufferSize below the minimum of " +
                   std::to_string(caps_.min_buffer_records * es) + " bytes");
    if (cb.buffer_size > kMaxBufferBytes)
      return inval("BufferSize above the simulator's " + std::to_string(kMaxBufferBytes) +
                   " bytes");
    if (cb.random >= 16) return inval("Random wider than 4 bits");
    if (cb.head >= cb.buffer_size || cb.head % es != 0 || cb.tail >= cb.buffer_size ||
        cb.tail % es != 0)
      return inval("head and tail must be multiples of 32 below BufferSize");
    if (cb.events.size() > caps_.max_events)
      return inval("more event slots than the " + std::to_string(caps_.max_events) +
                   " the unit has");
    for (const auto& e : cb.events)
      if (e.interval > lwp::kCounterMask || e.counter > lwp::kCounterMask)
        return inval("event interval or counter wider than 26 bits");
  }
  std::optional<lwp::Lwpcb> previous = slwpcb();
  if (!in) {
    if (active_) cb_ = *previous;
    active_ = false;
    return previous;
  }
  lwp::Lwpcb cb = *in;
  const bool same_buffer = cb.buffer_base == cb_.buffer_base && cb.buffer_size == buf_.size();
  slots_.clear();
  uint32_t flags = 0;
  for (const auto& e : cb.events) {
    Slot s;
    const bool usable = e.event_id >= 1 && e.event_id <= 30 && ((cfg_ >> e.event_id) & 1) &&
                        caps_.supported.event(e.event_id) &&
                        !(flags & lwp::Lwpcb::flag_of(e.event_id));
    if (usable) {
      s.id = e.event_id;
      flags |= lwp::Lwpcb::flag_of(e.event_id);
    }
    s.interval = e.interval;
    s.counter = e.counter;
    slots_.push_back(s);
  }
  if (flags != 0) {
    flags |= lwp::Lwpcb::kFlagEn;
    if (((cfg_ >> 31) & 1) && caps_.supported.interrupt) flags |= lwp::Lwpcb::kFlagInt;
  }
  cb.flags = flags;
  cb_ = cb;
  if (!same_buffer) buf_.assign(cb.buffer_size, 0);
  active_ = flags != 0;
  for (double& c : carry_) c = 0;
  return previous;
}

std::optional<lwp::Lwpcb> LwpUnit::slwpcb() const {
  if (!active_) return std::nullopt;
  lwp::Lwpcb cb = cb_;
  for (size_t i = 0; i < cb.events.size() && i < slots_.size(); ++i)
    cb.events[i].counter = slots_[i].counter;
  return cb;
}

bool LwpUnit::store(const lwp::Record& r) {
  const uint32_t size = cb_.buffer_size;
  lwp::encode_record(r, buf_.data() + cb_.head);
  const uint32_t next = (cb_.head + lwp::kRecordSize) % size;
  if (next == cb_.tail) {
    ++cb_.missed;  // full: the head stays, this record is overwritten by the next
    return false;
  }
  cb_.head = next;
  const uint32_t used = (cb_.head + size - cb_.tail) % size;
  if ((cb_.flags & lwp::Lwpcb::kFlagInt) && cb_.threshold != 0 && used == cb_.threshold) {
    ++interrupts_;
    pending_ = true;
  }
  return true;
}

template <typename Make>
void LwpUnit::count(Slot& s, uint64_t n, Make make) {
  while (n > 0) {
    if (s.counter == 0) {
      // Frozen at zero: this occurrence is the one the record describes.
      --n;
      const bool stored = store(make());
      s.counter = reload(s.interval);
      if (!stored && n > 0) {
        // Still full: every further firing overwrites the last record and
        // counts as missed; done arithmetically, writing the last one.
        const uint64_t period = uint64_t{s.interval} + 1;
        const uint64_t firings = n > s.counter ? (n - s.counter - 1) / period + 1 : 0;
        if (firings > 1) {
          // Skip to the last firing's occurrence: the counter frozen at 0.
          cb_.missed += firings - 1;
          n -= s.counter + (firings - 1) * period;
          s.counter = 0;
          continue;
        }
      }
      continue;
    }
    const uint64_t take = std::min<uint64_t>(n, s.counter);
    s.counter -= static_cast<uint32_t>(take);
    n -= take;
  }
}

void LwpUnit::run(const LwpActivity& a) {
  if (!active_) return;
  const lwp::Generation g = caps_.generation;
  auto whole = [&](lwp::Event e, double x) {
    const int id = static_cast<int>(e);
    double total = std::max(0.0, x) + carry_[id];
    double n = std::floor(total);
    carry_[id] = total - n;
    return static_cast<uint64_t>(n);
  };
  const uint8_t core = core_id();
  const uint8_t instr_id = lwp::event_id(g, lwp::Event::kInstructions);
  if (Slot* s = slot_of(instr_id)) {
    count(*s, whole(lwp::Event::kInstructions, a.instructions),
          [&] { return lwp::Record::simple(instr_id, core, pick_ip()); });
  }
  if (Slot* s = slot_of(lwp::event_id(g, lwp::Event::kBranches))) {
    count(*s, whole(lwp::Event::kBranches, a.branches), [&] {
      const uint64_t ip = pick_ip();
      const bool taken = (rng_() % 100) < 60;
      const bool predicted = (rng_() % 100) < 95;
      const uint64_t to = taken ? ip + 16 + rng_() % 1024 : ip + 2;
      return lwp::Record::branch(core, ip, to, taken, caps_.branch_prediction,
                                 caps_.branch_prediction && predicted, g);
    });
  }
  if (Slot* s = slot_of(lwp::event_id(g, lwp::Event::kDcache))) {
    // Eligible classes: MinLatency (x16 cycles) and the level filter.
    const double min_lat = caps_.cache_latency ? cb_.min_latency * 16.0 : 0.0;
    std::vector<double> weight(a.misses.size(), 0.0);
    double eligible = 0;
    for (size_t i = 0; i < a.misses.size(); ++i) {
      const MissClass& m = a.misses[i];
      if (m.latency_cycles < min_lat) continue;
      if (caps_.cache_levels && cb_.clf) {
        const bool ok = (m.source == lwp::kSrcLocalCache && cb_.nbc) ||
                        (m.source == lwp::kSrcRemoteCache && cb_.rdc) ||
                        (m.source == lwp::kSrcDram && cb_.ram) ||
                        (m.source == lwp::kSrcOther && cb_.oth);
        if (!ok) continue;
      }
      weight[i] = m.per_instruction * std::max(0.0, a.instructions);
      eligible += weight[i];
    }
    const unsigned n_bits = caps_.latency_max_bits;
    const uint32_t sat = n_bits >= 5 ? (1U << n_bits) - 16 : 0;
    count(*s, whole(lwp::Event::kDcache, eligible), [&] {
      size_t pick = 0;
      double x = std::uniform_real_distribution<double>(0, eligible)(rng_);
      for (size_t i = 0; i < weight.size(); ++i) {
        if (weight[i] <= 0) continue;
        pick = i;
        if (x < weight[i]) break;
        x -= weight[i];
      }
      const MissClass& m = a.misses[pick];
      double lat = m.latency_cycles * std::uniform_real_distribution<double>(0.75, 1.25)(rng_);
      lat = std::max(lat, min_lat);
      uint32_t cycles = static_cast<uint32_t>(std::min<double>(lat, sat)) & ~15U;
      if (cycles == 0) cycles = 16;
      const uint64_t addr =
          (a.data_base + (a.data_bytes ? rng_() % a.data_bytes : 0)) & ~uint64_t{63};
      return lwp::Record::dcache_miss(core, pick_ip(), cycles, m.source, caps_.data_address, addr,
                                      g);
    });
  }
}

bool LwpUnit::lwpins(uint64_t reg, uint32_t rm32, uint16_t imm, uint64_t ip) {
  if (!active_ || !has_instructions()) return false;
  return !store(lwp::Record::programmed(lwp::kProgrammedEvent, core_id(), ip, imm, rm32, reg));
}

void LwpUnit::lwpval(uint64_t reg, uint32_t rm32, uint16_t imm, uint64_t ip) {
  const uint8_t id = lwp::event_id(caps_.generation, lwp::Event::kValue);
  if (!active_ || id == 0) return;
  if (Slot* s = slot_of(id)) {
    count(*s, 1, [&] {
      return lwp::Record::programmed(lwp::kProgrammedValue, core_id(), ip, imm, rm32, reg);
    });
  }
}

std::vector<lwp::Record> LwpUnit::drain(size_t max) {
  std::vector<lwp::Record> out;
  const uint32_t size = cb_.buffer_size;
  if (size == 0 || buf_.size() != size) return out;
  while (cb_.tail != cb_.head && (max == 0 || out.size() < max)) {
    out.push_back(lwp::decode_record(buf_.data() + cb_.tail));
    cb_.tail = (cb_.tail + lwp::kRecordSize) % size;
  }
  return out;
}

Result<void> LwpUnit::set_tail(uint32_t tail) {
  if (cb_.buffer_size == 0 || tail >= cb_.buffer_size || tail % lwp::kRecordSize != 0)
    return inval("the tail must be a multiple of 32 below BufferSize");
  cb_.tail = tail;
  return Ok();
}

bool LwpUnit::take_interrupt() {
  const bool p = pending_;
  pending_ = false;
  return p;
}

}  // namespace resctrlfs::hw::sim
