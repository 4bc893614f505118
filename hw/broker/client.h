// Defines the client side of the MSR broker: BrokerClient sends batches of
// register operations over the broker's Unix socket, and BrokerMsrDevice is
// the MsrDevice the real backend programs hardware through.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "hw/broker/protocol.h"
#include "hw/device.h"

namespace resctrlfs::hw::broker {

struct Op {
  unsigned cpu = 0;
  uint32_t msr = 0;
  uint64_t value = 0;
  OpKind kind = OpKind::kRead;
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

 private:
  Result<void> connect_locked();
  Result<std::vector<OpResult>> transact_locked(const std::vector<Op>& ops);
  void close_locked();

  std::string path_;
  std::mutex mu_;
  int fd_ = -1;
};

class BrokerMsrDevice final : public MsrDevice {
 public:
  explicit BrokerMsrDevice(std::string socket_path) : client_(std::move(socket_path)) {}
  BrokerClient& client() { return client_; }
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override;
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t value) override;

 private:
  BrokerClient client_;
};

}  // namespace resctrlfs::hw::broker
