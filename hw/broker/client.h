// Defines the client side of the MSR broker: BrokerClient sends batches of
// register operations over the broker's Unix socket, BrokerMsrDevice is
// the MsrDevice (and the MmioDevice, for the I/O RDT tagging registers) the
// real backend programs hardware through, and BrokerPmtDevice the
// PmtTelemetryDevice it reads Intel PMT telemetry through.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "hw/broker/protocol.h"
#include "hw/x86/device.h"
#include "hw/x86/pmt_sysfs.h"

namespace resctrlfs::hw::broker {

struct Op {
  unsigned cpu = 0;
  uint32_t msr = 0;
  uint64_t value = 0;
  OpKind kind = OpKind::kRead;
  uint32_t width = 0;  // MMIO: bytes; the address is (msr << 32) | cpu

  static Op mmio(uint64_t addr, unsigned width, uint64_t value, bool write) {
    return Op{static_cast<uint32_t>(addr), static_cast<uint32_t>(addr >> 32), value,
              write ? OpKind::kMmioWrite : OpKind::kMmioRead, width};
  }
  // One 8-byte counter word at byte `offset` of aggregator telem<N>.
  static Op pmt_read(unsigned telem, uint32_t offset) {
    return Op{telem, offset, 0, OpKind::kPmtRead, 8};
  }
};

struct OpResult {
  int err = 0;
  uint64_t value = 0;
};

class BrokerClient {
 public:
  explicit BrokerClient(std::string socket_path) : path_(std::move(socket_path)) {}
  ~BrokerClient();
  BrokerClient(const BrokerClient&) = delete;
  BrokerClient& operator=(const BrokerClient&) = delete;

  // Connects now (otherwise the first transact() does). ECONNREFUSED /
  // ENOENT with a message naming the socket when the broker is not there.
  Result<void> connect();
  // Sends one batch and waits for its results. A transport failure is an
  // error of the whole call (EIO); per-operation failures are in the results.
  Result<std::vector<OpResult>> transact(const std::vector<Op>& ops);

  // Connections made after the first one (the broker went away and came
  // back, or a transport error forced a fresh one).
  uint64_t reconnects() const { return reconnects_.load(); }
  // Requests answered and register operations they carried, since start.
  uint64_t round_trips() const { return round_trips_.load(); }
  uint64_t ops_sent() const { return ops_sent_.load(); }

 private:
  Result<void> connect_locked();
  Result<std::vector<OpResult>> transact_locked(const std::vector<Op>& ops);
  void close_locked();

  std::string path_;
  std::mutex mu_;
  int fd_ = -1;
  bool connected_once_ = false;
  std::atomic<uint64_t> reconnects_{0};
  std::atomic<uint64_t> round_trips_{0};
  std::atomic<uint64_t> ops_sent_{0};
};

class BrokerMsrDevice final : public MsrDevice, public MmioDevice {
 public:
  explicit BrokerMsrDevice(std::string socket_path) : client_(std::move(socket_path)) {}
  BrokerClient& client() { return client_; }
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override;
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t value) override;
  // The whole batch in one request (split only beyond kMaxBatch).
  void run(std::vector<MsrOp>& ops) override;
  uint64_t reconnects() const override { return client_.reconnects(); }
  Result<uint64_t> mmio_read(uint64_t addr, unsigned width) override;
  Result<void> mmio_write(uint64_t addr, unsigned width, uint64_t value) override;
  // The whole batch in one request (at most kMaxBatch operations).
  void run(std::vector<MmioOp>& ops) override;

 private:
  BrokerClient client_;
};

// The telemetry aggregators the real backend found in sysfs (their GUID,
// size and package are world-readable), their counters read through the
// broker by telem<N> number: the telem files are root's. A read the broker
// refuses or fails is EIO, as a failed read of the region would be.
class BrokerPmtDevice final : public PmtTelemetryDevice {
 public:
  BrokerPmtDevice(std::shared_ptr<BrokerMsrDevice> dev, std::vector<x86::PmtAggregator> aggregators)
      : dev_(std::move(dev)), aggregators_(std::move(aggregators)) {}
  std::vector<PmtRegion> pmt_regions() const override;
  Result<uint64_t> pmt_read64(size_t region, uint64_t offset) override;

 private:
  std::shared_ptr<BrokerMsrDevice> dev_;
  std::vector<x86::PmtAggregator> aggregators_;
};

}  // namespace resctrlfs::hw::broker
