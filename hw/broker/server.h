// Defines BrokerServer: the resctrl-msrd Unix-socket server (Boost.Asio).
// It accepts connections only from the configured uid (SO_PEERCRED), reads
// batches of register operations, checks each batch against the Policy and
// executes it on the MsrDevice (/dev/cpu/N/msr, or a simulated machine) and,
// for the I/O RDT tagging registers, on the MmioDevice (/dev/mem, a file
// standing in for it, or a simulated machine; none: MMIO is refused), and
// reads of Intel PMT telemetry on the PmtTelemetryDevice (the intel_pmt
// driver's telem files, or a simulated machine; none: refused), whose
// aggregators are the Policy's in the same order.
// Refusals are logged with the peer's pid and uid.
#pragma once

#include <sys/types.h>

#include <utility>  // before Asio: Boost 1.74 awaitable.hpp needs std::exchange

#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <string>

#include "base/fd_reserve.h"
#include "hw/broker/policy.h"
#include "hw/x86/device.h"

namespace resctrlfs::hw::broker {

class BrokerServer {
 public:
  using Logger = std::function<void(const std::string&)>;

  BrokerServer(boost::asio::io_context& io, std::string socket_path, uid_t allowed_uid,
               Policy policy, std::shared_ptr<MsrDevice> msr, Logger log,
               std::shared_ptr<MmioDevice> mmio = nullptr,
               std::shared_ptr<PmtTelemetryDevice> pmt = nullptr);
  ~BrokerServer();
  // Binds the socket (replacing a stale one) and starts accepting.
  Result<void> start();
  void stop();

  // Executes one batch under the policy (all refused if any is refused).
  std::vector<WireResult> execute(const std::vector<WireOp>& ops, const std::string& peer);

 private:
  class Session;
  void accept_next();

  std::string path_;
  uid_t allowed_uid_;
  Policy policy_;
  std::shared_ptr<MsrDevice> msr_;
  std::shared_ptr<MmioDevice> mmio_;
  std::shared_ptr<PmtTelemetryDevice> pmt_;
  Logger log_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  // Out of descriptors, accept() sheds and waits instead of spinning.
  AcceptGuard guard_;
  boost::asio::steady_timer backoff_;
};

}  // namespace resctrlfs::hw::broker
