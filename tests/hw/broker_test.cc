// Tests the MSR broker: its policy (table-driven), the resctrl-msrd
// executable serving a simulated machine (valid requests work; IA32_LSTAR,
// out-of-range indices, reserved bits and a wrong peer uid are refused and
// logged; idle connections past its descriptor limit do not make it spin),
// and the real backend's Arch programming through it.
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "hw/broker/client.h"
#include "hw/broker/policy.h"
#include "hw/real/msr_backend.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/irdt.h"
#include "hw/x86/pmt_sysfs.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using broker::Op;
using broker::OpKind;

namespace {

sim::SimMachine machine(const std::string& name) {
  auto p = sim::load_profile(name);
  REQUIRE(p.ok());
  return sim::SimMachine(*p);
}

// A resctrl-msrd process serving a simulated machine, stopped at scope end.
class BrokerProcess {
 public:
  // `nofile`: the broker's RLIMIT_NOFILE (0: inherited).
  BrokerProcess(const std::string& platform, uid_t allow_uid,
                const std::vector<std::string>& extra = {}, rlim_t nofile = 0) {
    char dir[] = "/tmp/resctrl-msrd-test.XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    dir_ = dir;
    socket_ = dir_ + "/msrd.sock";
    log_ = dir_ + "/msrd.log";
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      FILE* f = std::freopen(log_.c_str(), "w", stderr);
      (void)f;
      if (nofile != 0) {
        const rlimit l{nofile, nofile};
        ::setrlimit(RLIMIT_NOFILE, &l);
      }
      std::string uid = std::to_string(allow_uid);
      std::vector<std::string> args = {"resctrl-msrd", "--sim",       platform, "--socket",
                                       socket_,        "--allow-uid", uid};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(RESCTRL_MSRD_PATH, argv.data());
      ::_exit(127);
    }
    // No deadline (a busy machine starts it late): until it serves or exits.
    struct stat st;
    while (::stat(socket_.c_str(), &st) != 0 && !exited())
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(::stat(socket_.c_str(), &st) == 0);
    // The socket file appears at bind, before listen: a connect in between
    // is refused. The broker logs "serving ... on SOCKET" once it listens.
    while (log().find(" on " + socket_) == std::string::npos && !exited())
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(log().find(" on " + socket_) != std::string::npos);
  }
  // Whether the broker has exited (left unreaped for the destructor).
  bool exited() const {
    siginfo_t si{};
    return ::waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == pid_;
  }
  ~BrokerProcess() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    ::unlink(socket_.c_str());
    ::unlink(log_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }
  std::string log() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  std::string dir_, socket_, log_;
};

struct PolicyCase {
  const char* profile;
  const char* what;
  unsigned cpu;
  uint32_t msr;
  uint64_t value;
  OpKind kind;
  bool allowed;
};

}  // namespace

TEST_CASE("broker policy allows only enumerated RDT registers with reserved bits clear") {
  const PolicyCase cases[] = {
      {"intel-2s", "IA32_LSTAR read", 0, IA32_LSTAR, 0, OpKind::kRead, false},
      {"intel-2s", "IA32_LSTAR write", 0, IA32_LSTAR, 0, OpKind::kWrite, false},
      {"intel-2s", "a random MSR", 0, 0x10, 0, OpKind::kRead, false},
      {"intel-2s", "L3 mask 14", 0, IA32_L3_MASK_0 + 14, 0x7ff, OpKind::kWrite, true},
      {"intel-2s", "L3 mask 15 (beyond num_closid)", 0, IA32_L3_MASK_0 + 15, 1, OpKind::kWrite,
       false},
      {"intel-2s", "L3 mask too wide", 0, IA32_L3_MASK_0, 0x800, OpKind::kWrite, false},
      {"intel-2s", "L2 mask without L2 CAT", 0, IA32_L2_MASK_0, 1, OpKind::kRead, false},
      {"intel-2s", "offline CPU", 8, IA32_PQR_ASSOC, 0, OpKind::kWrite, false},
      {"intel-2s", "PQR_ASSOC", 3, IA32_PQR_ASSOC, (14ULL << 32) | 223, OpKind::kWrite, true},
      {"intel-2s", "PQR_ASSOC CLOSID 16", 3, IA32_PQR_ASSOC, 16ULL << 32, OpKind::kWrite, false},
      {"intel-2s", "PQR_ASSOC RMID 224", 3, IA32_PQR_ASSOC, 224, OpKind::kWrite, false},
      {"intel-2s", "QM_EVTSEL", 0, IA32_QM_EVTSEL, (5ULL << 32) | 2, OpKind::kWrite, true},
      {"intel-2s", "QM_EVTSEL event 4", 0, IA32_QM_EVTSEL, 4, OpKind::kWrite, false},
      {"intel-2s", "QM_EVTSEL reserved", 0, IA32_QM_EVTSEL, 0x101, OpKind::kWrite, false},
      {"intel-2s", "QM_CTR read", 0, IA32_QM_CTR, 0, OpKind::kRead, true},
      {"intel-2s", "QM_CTR write", 0, IA32_QM_CTR, 0, OpKind::kWrite, false},
      {"intel-2s", "CDP on", 4, IA32_L3_QOS_CFG, 1, OpKind::kWrite, true},
      {"intel-2s", "QOS_CFG reserved", 4, IA32_L3_QOS_CFG, 2, OpKind::kWrite, false},
      {"intel-2s", "MBA delay 90", 0, IA32_L2_QOS_EXT_BW_THRTL_0 + 14, 90, OpKind::kWrite, true},
      {"intel-2s", "MBA delay 91", 0, IA32_L2_QOS_EXT_BW_THRTL_0, 91, OpKind::kWrite, false},
      {"intel-2s", "MBA index 15", 0, IA32_L2_QOS_EXT_BW_THRTL_0 + 15, 0, OpKind::kWrite, false},
      {"intel-2s", "bad op kind", 0, IA32_PQR_ASSOC, 0, static_cast<OpKind>(7), false},
      {"amd-2s", "AMD unlimited", 0, L3QOS_BW_CONTROL_0 + 15, 0x800, OpKind::kWrite, true},
      {"amd-2s", "AMD above U bit", 0, L3QOS_BW_CONTROL_0, 0x1000, OpKind::kWrite, false},
      {"amd-2s", "SMBA", 0, L3QOS_SLOW_BW_CONTROL_0 + 1, 8, OpKind::kWrite, true},
      {"amd-2s", "BMEC", 0, QOS_EVT_CFG_0 + 1, 0x15, OpKind::kWrite, true},
      {"amd-2s", "BMEC reserved", 0, QOS_EVT_CFG_0, 0x80, OpKind::kWrite, false},
      {"amd-2s", "ABMC cfg", 0, L3_QOS_ABMC_CFG, ABMC_CFG_CFG_EN | (31ULL << 48) | 0x7f,
       OpKind::kWrite, true},
      {"amd-2s", "ABMC counter 32", 0, L3_QOS_ABMC_CFG, ABMC_CFG_CFG_EN | (32ULL << 48),
       OpKind::kWrite, false},
      {"amd-2s", "ABMC descriptor write", 0, L3_QOS_ABMC_DSC, 0, OpKind::kWrite, false},
      {"amd-2s", "SDCIAE without enumeration", 0, L3_QOS_EXT_CFG, 2, OpKind::kWrite, false},
      {"amd-io", "SDCIAE enable", 3, L3_QOS_EXT_CFG, L3_QOS_EXT_CFG_SDCIAE_EN, OpKind::kWrite,
       true},
      {"amd-io", "SDCIAE and ABMC", 3, L3_QOS_EXT_CFG, 3, OpKind::kWrite, true},
      {"amd-io", "L3_QOS_EXT_CFG reserved", 3, L3_QOS_EXT_CFG, 4, OpKind::kWrite, false},
      {"amd-io", "L3_QOS_EXT_CFG read", 3, L3_QOS_EXT_CFG, 0, OpKind::kRead, true},
      {"amd-2s", "Intel MBA register on AMD", 0, IA32_L2_QOS_EXT_BW_THRTL_0, 0, OpKind::kRead,
       false},
      {"amd-2s", "LWP_CFG read", 0, MSR_AMD64_LWP_CFG, 0, OpKind::kRead, false},
      {"amd-2s", "LWP_CFG write", 0, MSR_AMD64_LWP_CFG, 0x8000000f, OpKind::kWrite, false},
      {"amd-2s", "LWP_CBADDR read", 1, MSR_AMD64_LWP_CBADDR, 0, OpKind::kRead, false},
      {"amd-2s", "LWP_CBADDR write", 1, MSR_AMD64_LWP_CBADDR, 0x7f0000001000, OpKind::kWrite,
       false},
      {"intel-cmt", "no CAT: CLOSID 1", 0, IA32_PQR_ASSOC, 1ULL << 32, OpKind::kWrite, false},
      {"intel-cmt", "no CAT: no masks", 0, IA32_L3_MASK_0, 1, OpKind::kRead, false},
      {"intel-2s", "prefetchers without pseudo-locking", 0, MSR_MISC_FEATURE_CONTROL, 0,
       OpKind::kRead, false},
      {"intel-bdx", "prefetchers read", 0, MSR_MISC_FEATURE_CONTROL, 0, OpKind::kRead, true},
      {"intel-bdx", "prefetchers off", 5, MSR_MISC_FEATURE_CONTROL, 0xF, OpKind::kWrite, true},
      {"intel-bdx", "prefetchers restored", 5, MSR_MISC_FEATURE_CONTROL, 0x2, OpKind::kWrite, true},
      {"intel-bdx", "other MISC_FEATURE_CONTROL bits", 0, MSR_MISC_FEATURE_CONTROL, 0x10,
       OpKind::kWrite, false},
  };
  for (const auto& c : cases) {
    auto m = machine(c.profile);
    broker::Policy p(m.info(), m.limits());
    INFO(c.profile << ": " << c.what);
    auto r = p.check(c.cpu, c.msr, c.value, c.kind);
    CHECK(r.ok() == c.allowed);
    if (!r.ok()) {
      CHECK(r.error().code == EPERM);
      CHECK_FALSE(r.error().message.empty());
      // The LWP registers are refused by name (the log says why).
      if (c.msr == MSR_AMD64_LWP_CFG || c.msr == MSR_AMD64_LWP_CBADDR)
        CHECK(r.error().message.find("LWP") != std::string::npos);
    }
  }
}

TEST_CASE("resctrl-msrd serves valid requests and refuses everything else") {
  BrokerProcess b("intel-2s", ::getuid());
  broker::BrokerClient client(b.socket());
  REQUIRE(client.connect().ok());

  auto ok = client.transact({Op{4, IA32_L3_MASK_0 + 3, 0x0f0, OpKind::kWrite},
                             Op{4, IA32_L3_MASK_0 + 3, 0, OpKind::kRead}});
  REQUIRE(ok.ok());
  CHECK((*ok)[0].err == 0);
  CHECK((*ok)[1].err == 0);
  CHECK((*ok)[1].value == 0x0f0);

  auto lstar = client.transact({Op{0, IA32_LSTAR, 0, OpKind::kRead}});
  REQUIRE(lstar.ok());
  CHECK((*lstar)[0].err == EPERM);

  auto beyond = client.transact({Op{0, IA32_L3_MASK_0 + 16, 0x1, OpKind::kWrite}});
  REQUIRE(beyond.ok());
  CHECK((*beyond)[0].err == EPERM);

  // One refused operation refuses the whole batch: the valid write is not done.
  auto mixed = client.transact(
      {Op{0, IA32_L3_MASK_0 + 2, 0x3, OpKind::kWrite}, Op{0, IA32_LSTAR, 0xdead, OpKind::kWrite}});
  REQUIRE(mixed.ok());
  CHECK((*mixed)[0].err == EPERM);
  CHECK((*mixed)[1].err == EPERM);
  auto back = client.transact({Op{0, IA32_L3_MASK_0 + 2, 0, OpKind::kRead}});
  REQUIRE(back.ok());
  CHECK((*back)[0].value == 0x7ff);

  // Allowed by policy but refused by the (simulated) hardware: a #GP is EIO
  // and the rest of the batch is not executed.
  auto gp = client.transact({Op{0, IA32_L3_MASK_0 + 1, 0x505, OpKind::kWrite},
                             Op{0, IA32_L3_MASK_0 + 1, 0, OpKind::kRead}});
  REQUIRE(gp.ok());
  CHECK((*gp)[0].err == EIO);
  CHECK((*gp)[1].err == ECANCELED);

  std::string log = b.log();
  CHECK(log.find("refused batch") != std::string::npos);
  CHECK(log.find("msr 0xc0000082") != std::string::npos);
}

TEST_CASE("resctrl-msrd refuses a peer with the wrong uid") {
  BrokerProcess b("intel-2s", ::getuid() + 4242);
  broker::BrokerClient client(b.socket());
  auto r = client.transact({Op{0, IA32_PQR_ASSOC, 0, OpKind::kRead}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EIO);
  // The broker logs the refusal after hanging up: however late that is.
  while (b.log().find("refused connection") == std::string::npos && !b.exited())
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(b.log().find("refused connection") != std::string::npos);
}

// utime + stime of `pid`, in clock ticks.
long cpu_ticks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

TEST_CASE("resctrl-msrd out of descriptors sheds connections instead of spinning") {
  BrokerProcess b("intel-2s", ::getuid(), {}, 64);
  std::vector<int> conns;
  for (int i = 0; i < 100; ++i) {
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", b.socket().c_str());
    REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    conns.push_back(c);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // CPU, not wall-clock time: a broker retrying accept() at once burns up
  // to 500 ticks in these 5 s (about 100 at nice 19 on a loaded machine);
  // an idle one next to none, whatever the load.
  const long before = cpu_ticks(b.pid());
  std::this_thread::sleep_for(std::chrono::seconds(5));
  CHECK(cpu_ticks(b.pid()) - before < 50);
  for (int c : conns) ::close(c);
  // It kept its last descriptors: the connections past them were closed.
  CHECK(b.log().find("connection(s) closed as soon as accepted") != std::string::npos);
  broker::BrokerClient client(b.socket());
  CHECK(client.transact({Op{0, IA32_PQR_ASSOC, 0, OpKind::kRead}}).ok());
}

TEST_CASE("the real backend's Arch programs registers through the broker") {
  BrokerProcess b("amd-2s", ::getuid());
  auto cpuid_only = machine("amd-2s");  // stands in for /dev/cpu/N/cpuid
  auto topo = cpuid_only.profile().topology();
  auto backend = real::make_msr_backend_with(cpuid_only, topo, b.socket());
  REQUIRE(backend.ok());
  Arch& a = *backend->arch;
  CHECK(backend->sim == nullptr);
  CHECK(a.thread_tagger() == nullptr);
  REQUIRE(a.update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 2, 0x00ff},
                          {ResourceId::MB, ConfType::NONE, 0, 3, 64}})
              .ok());
  broker::BrokerClient client(b.socket());
  auto regs = client.transact({Op{4, IA32_L3_MASK_0 + 2, 0, OpKind::kRead},
                               Op{0, L3QOS_BW_CONTROL_0 + 3, 0, OpKind::kRead}});
  REQUIRE(regs.ok());
  CHECK((*regs)[0].value == 0x00ff);
  CHECK((*regs)[1].value == 64);
  REQUIRE(a.set_cpu_assoc(6, 2, 17).ok());
  CHECK(a.read_counter(ResourceId::L3, 1, 0, 17, EventId::MBM_TOTAL, nullptr).err !=
        ReadError::kError);
}

TEST_CASE("make_msr_backend refuses a machine without RDT, or fails cleanly without a broker") {
  auto r = make_msr_backend("/nonexistent/resctrl-msrd.sock");
  REQUIRE_FALSE(r.ok());
  INFO(r.error().message);
  CHECK_FALSE(r.error().message.empty());
  CHECK((r.error().code == ENODEV || r.error().code == ENOENT || r.error().code == ECONNREFUSED));
}

TEST_CASE("resctrl-msrd drops a malformed request and keeps serving others") {
  BrokerProcess b("intel-2s", ::getuid());
  {
    broker::BrokerClient raw(b.socket());
    REQUIRE(raw.connect().ok());
  }
  // A client speaking garbage: bad magic, then an oversized batch.
  for (uint32_t magic : {0xdeadbeefU, broker::kRequestMagic}) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", b.socket().c_str());
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    broker::WireHeader h{magic, magic == broker::kRequestMagic ? broker::kMaxBatch + 1 : 1};
    REQUIRE(::send(fd, &h, sizeof(h), MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(h)));
    char c;
    CHECK(::recv(fd, &c, 1, 0) == 0);  // the broker closed the connection
    ::close(fd);
  }
  broker::BrokerClient client(b.socket());
  auto r = client.transact({Op{0, IA32_PQR_ASSOC, 0, OpKind::kRead}});
  REQUIRE(r.ok());
  CHECK((*r)[0].err == 0);
  CHECK(b.log().find("malformed") != std::string::npos);
}

namespace {

// A scratch directory with an IRDT table and a file standing in for
// physical memory (0x30000 bytes of 0xaa), removed at scope end.
struct MmioFiles {
  std::string dir, irdt, mem;
  MmioFiles() {
    char d[] = "/tmp/resctrl-msrd-mmio.XXXXXX";
    REQUIRE(::mkdtemp(d) != nullptr);
    dir = d;
    irdt = dir + "/IRDT";
    mem = dir + "/mem";
    IrdtDesc desc;
    IrdtRmud r;
    // A PCIe link, 8 channels of 2-byte registers (CLOS at 0x20000, RMID at
    // 0x20100), and a CXL.Cache link with 8-byte registers at 0x21000.
    r.rcs.push_back(IrdtRcs{1, IoLinkType::kPcie, 8, IRDT_RCS_RTS | IRDT_RCS_CTS | IRDT_RCS_REGW,
                            0x100, 0x0, 0x20000});
    r.rcs.push_back(
        IrdtRcs{2, IoLinkType::kCxlCache, 1, IRDT_RCS_RTS | IRDT_RCS_CTS, 0x8, 0x0, 0x21000});
    r.dss.push_back(IrdtDss{IoDeviceType::kRootPort, 0x1600, {IrdtChms{1, {0x82}}}});
    r.dss.push_back(IrdtDss{IoDeviceType::kRceip, 0x8000, {IrdtChms{2, {0x80}}}});
    desc.rmuds.push_back(r);
    write(irdt, build_irdt(desc));
    write(mem, std::vector<uint8_t>(0x30000, 0xaa));
  }
  ~MmioFiles() {
    ::unlink(irdt.c_str());
    ::unlink(mem.c_str());
    ::rmdir(dir.c_str());
  }
  static void write(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    REQUIRE(f.good());
  }
  std::vector<uint8_t> bytes(uint64_t addr, size_t n) const {
    std::ifstream f(mem, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(addr));
    std::vector<uint8_t> out(n);
    f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
    return out;
  }
};

}  // namespace

TEST_CASE("resctrl-msrd serves the IRDT's I/O RDT registers through physical memory, nothing else",
          "[irdt]") {
  MmioFiles files;
  BrokerProcess b("intel-2s", ::getuid(),
                  {"--irdt", files.irdt, "--mem", files.mem, "--irdt-wide-bytes", "8"});
  broker::BrokerMsrDevice dev(b.socket());

  // IO_PQR_CLOS2 of the PCIe link: exactly two bytes change.
  REQUIRE(dev.mmio_write(0x20004, 2, 5).ok());
  CHECK(files.bytes(0x20002, 6) == std::vector<uint8_t>{0xaa, 0xaa, 5, 0, 0xaa, 0xaa});
  auto v = dev.mmio_read(0x20004, 2);
  REQUIRE(v.ok());
  CHECK(*v == 5);
  // IO_PQR_RMID0 of the CXL.Cache link: eight bytes.
  REQUIRE(dev.mmio_write(0x21008, 8, 0x1234).ok());
  CHECK(files.bytes(0x21008, 8) == std::vector<uint8_t>{0x34, 0x12, 0, 0, 0, 0, 0, 0});

  // Refused: past a block, unaligned, the wrong width, any other page.
  for (auto [addr, width] : std::vector<std::pair<uint64_t, unsigned>>{{0x20010, 2},
                                                                       {0x20003, 2},
                                                                       {0x20004, 4},
                                                                       {0x20004, 8},
                                                                       {0x1000, 8},
                                                                       {0x21010, 8},
                                                                       {0x200ff, 1},
                                                                       {0x20110, 2}}) {
    INFO("addr " << std::hex << addr << " width " << width);
    auto w = dev.mmio_write(addr, width, 1);
    REQUIRE_FALSE(w.ok());
    CHECK(w.error().code == EPERM);
  }
  // A batch with one refused access runs none of it.
  std::vector<MmioOp> batch = {{0x20100, 2, 7, true}, {0x3000, 8, 7, true}};
  dev.run(batch);
  CHECK(batch[0].err == EPERM);
  CHECK(batch[1].err == EPERM);
  CHECK(files.bytes(0x20100, 2) == std::vector<uint8_t>{0xaa, 0xaa});
  batch = {{0x20100, 2, 7, true}, {0x20102, 2, 8, true}, {0x20100, 2, 0, false}};
  dev.run(batch);
  CHECK(batch[2].err == 0);
  CHECK(batch[2].value == 7);
  CHECK(files.bytes(0x20100, 4) == std::vector<uint8_t>{7, 0, 8, 0});
  // MSRs are served as before.
  CHECK(dev.read(0, IA32_PQR_ASSOC).ok());
  CHECK(b.log().find("is not an I/O RDT register the IRDT table names") != std::string::npos);
}

TEST_CASE("resctrl-msrd probes the width of registers whose RCS has REGW clear", "[irdt]") {
  MmioFiles files;
  // Make the PCIe link's registers REGW-clear too (8 channels: probeable).
  IrdtDesc desc;
  IrdtRmud r;
  r.rcs.push_back(
      IrdtRcs{1, IoLinkType::kPcie, 8, IRDT_RCS_RTS | IRDT_RCS_CTS, 0x100, 0x0, 0x20000});
  r.rcs.push_back(
      IrdtRcs{2, IoLinkType::kCxlCache, 1, IRDT_RCS_RTS | IRDT_RCS_CTS, 0x8, 0x0, 0x21000});
  r.dss.push_back(IrdtDss{IoDeviceType::kRootPort, 0x1600, {IrdtChms{1, {0x82}}}});
  r.dss.push_back(IrdtDss{IoDeviceType::kRceip, 0x8000, {IrdtChms{2, {0x80}}}});
  desc.rmuds.push_back(r);
  MmioFiles::write(files.irdt, build_irdt(desc));
  {
    // A file keeps what a 4-byte write at register 0 + 4 put there: the
    // registers are 4 bytes wide, for both links.
    BrokerProcess b("intel-2s", ::getuid(), {"--irdt", files.irdt, "--mem", files.mem});
    broker::BrokerMsrDevice dev(b.socket());
    CHECK(b.log().find("REGW clear are 4 bytes wide (probed)") != std::string::npos);
    // The probe put back what it found.
    CHECK(files.bytes(0x20004, 4) == std::vector<uint8_t>{0xaa, 0xaa, 0xaa, 0xaa});
    CHECK(files.bytes(0x20104, 4) == std::vector<uint8_t>{0xaa, 0xaa, 0xaa, 0xaa});
    CHECK(dev.mmio_write(0x20004, 4, 3).ok());
    CHECK(dev.mmio_read(0x21000, 4).ok());
    CHECK(dev.mmio_write(0x20008, 8, 3).error().code == EPERM);
    CHECK(dev.mmio_read(0x21000, 8).error().code == EPERM);
  }
  // Only the single-channel CXL link: nothing to probe with, so its
  // registers are not served, and the broker says what to do.
  desc.rmuds[0].rcs.erase(desc.rmuds[0].rcs.begin());
  desc.rmuds[0].dss.erase(desc.rmuds[0].dss.begin());
  MmioFiles::write(files.irdt, build_irdt(desc));
  {
    BrokerProcess b("intel-2s", ::getuid(), {"--irdt", files.irdt, "--mem", files.mem});
    broker::BrokerMsrDevice dev(b.socket());
    CHECK(dev.mmio_read(0x21000, 8).error().code == EPERM);
    CHECK(dev.mmio_read(0x21000, 4).error().code == EPERM);
    CHECK(b.log().find("could not be probed (no such RCS has two channels)") != std::string::npos);
    CHECK(b.log().find("give --irdt-wide-bytes 4 or 8") != std::string::npos);
  }
  // Told: served at that width.
  BrokerProcess b("intel-2s", ::getuid(),
                  {"--irdt", files.irdt, "--mem", files.mem, "--irdt-wide-bytes", "8"});
  broker::BrokerMsrDevice dev(b.socket());
  CHECK(dev.mmio_read(0x21000, 8).ok());
}

TEST_CASE("resctrl-msrd without an IRDT table, or with a malformed one, serves no MMIO", "[irdt]") {
  MmioFiles files;
  {
    BrokerProcess b("intel-2s", ::getuid(), {"--mem", files.mem});
    broker::BrokerMsrDevice dev(b.socket());
    auto w = dev.mmio_write(0x20004, 2, 5);
    REQUIRE_FALSE(w.ok());
    CHECK(w.error().code == EPERM);
    CHECK(b.log().find("serves no MMIO") != std::string::npos);
  }
  std::ifstream in(files.irdt, std::ios::binary);
  std::vector<uint8_t> blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  blob[9] ^= 1;  // checksum
  MmioFiles::write(files.irdt, blob);
  BrokerProcess b("intel-2s", ::getuid(), {"--irdt", files.irdt, "--mem", files.mem});
  broker::BrokerMsrDevice dev(b.socket());
  auto w = dev.mmio_write(0x20004, 2, 5);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().code == EPERM);
  CHECK(b.log().find("checksum") != std::string::npos);
  CHECK(files.bytes(0x20004, 2) == std::vector<uint8_t>{0xaa, 0xaa});
}

TEST_CASE("resctrl-msrd --sim serves a simulated machine's I/O RDT registers", "[irdt]") {
  BrokerProcess b("intel-gnr-io", ::getuid());
  broker::BrokerMsrDevice dev(b.socket());
  REQUIRE(dev.mmio_write(0xfed10002, 2, 4).ok());
  auto v = dev.mmio_read(0xfed10002, 2);
  REQUIRE(v.ok());
  CHECK(*v == 4);
  REQUIRE(dev.mmio_write(0xfed20100, 8, 9).ok());
  // The reserved offsets the simulated page ignores are refused before.
  auto w = dev.mmio_write(0xfed10800, 8, 1);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().code == EPERM);
  CHECK(dev.write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRAE | L3_IO_RDT_CFG_IRME).ok());
}

TEST_CASE("resctrl-msrd --sim serves a simulated machine's PMT telemetry to the real Arch",
          "[pmt]") {
  BrokerProcess b("intel-aet", ::getuid());
  auto cpuid_only = machine("intel-aet");  // stands in for /dev/cpu/N/cpuid and sysfs
  auto topo = cpuid_only.profile().topology();
  // The --sim broker serves the machine's aggregators as telem0, telem1, ...
  std::vector<PmtAggregator> aggs;
  const auto regions = cpuid_only.pmt_regions();
  REQUIRE(regions.size() == 4);
  for (size_t i = 0; i < regions.size(); ++i)
    aggs.push_back(PmtAggregator{static_cast<unsigned>(i), regions[i], ""});
  auto backend = real::make_msr_backend_with(cpuid_only, topo, b.socket(), {}, aggs);
  REQUIRE(backend.ok());
  Arch& a = *backend->arch;
  REQUIRE(a.info().res(ResourceId::PERF_PKG).mon.capable);
  CHECK(a.info().res(ResourceId::PERF_PKG).mon.num_rmids == 576);
  CHECK(a.info().res(ResourceId::PERF_PKG).mon.mon_domains.size() == 2);
  // Nothing ran with RMID 5: no valid word on either package.
  CHECK(a.read_counter(ResourceId::PERF_PKG, 0, 0, 5, EventId::CORE_ENERGY, nullptr).err ==
        ReadError::kUnavailable);
  CHECK(a.read_counter(ResourceId::PERF_PKG, 1, 0, 5, EventId::UOPS_RETIRED, nullptr).err ==
        ReadError::kUnavailable);

  auto dev = std::make_shared<broker::BrokerMsrDevice>(b.socket());
  broker::BrokerPmtDevice pmt(dev, aggs);
  CHECK(pmt.pmt_read64(0, 0).ok());
  CHECK(pmt.pmt_read64(0, 4).error().code == EIO);                // refused: unaligned
  CHECK(pmt.pmt_read64(0, regions[0].size).error().code == EIO);  // refused: beyond
  CHECK(pmt.pmt_read64(9, 0).error().code == EIO);
  // On the wire the refusal is EPERM, and a telem number not served too.
  auto r = dev->client().transact({Op::pmt_read(7, 0)});
  REQUIRE(r.ok());
  CHECK((*r)[0].err == EPERM);
  CHECK(b.log().find("PMT read of 8 bytes at telem0 offset 0x4") != std::string::npos);
  CHECK(b.log().find("telem7 is not a per-RMID telemetry aggregator") != std::string::npos);

  // A broker whose machine has no telemetry refuses every PMT read.
  BrokerProcess none("intel-2s", ::getuid());
  broker::BrokerClient client(none.socket());
  auto n = client.transact({Op::pmt_read(0, 0)});
  REQUIRE(n.ok());
  CHECK((*n)[0].err == EPERM);
  CHECK(none.log().find("serves no PMT telemetry") != std::string::npos);
}
