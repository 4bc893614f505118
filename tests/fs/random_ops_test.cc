// Randomised operation sequences against the model (deterministic seed):
// after every step the kernel's invariants must hold. Each CPU belongs to
// exactly one CTRL_MON group (the default group owns the rest), a MON
// group's CPUs are a subset of its parent's, PQR_ASSOC in the simulator
// matches the owner, listed tasks partition the threads among CTRL_MON
// groups, and nothing crashes on random input.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>

#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

std::vector<std::string> group_dirs(Shell& sh) {
  std::vector<std::string> out = {""};
  for (const std::string& n : sh.ls("/")) {
    if (sh.ls("/" + n).count("schemata") && n != "info") out.push_back("/" + n);
  }
  std::vector<std::string> all = out;
  for (const std::string& g : out) {
    for (const std::string& m : sh.ls(g + "/mon_groups")) all.push_back(g + "/mon_groups/" + m);
  }
  return all;
}

std::vector<unsigned> list_of(const std::string& text) {
  std::vector<unsigned> out;
  size_t pos = 0;
  while (pos < text.size() && text[pos] != '\n') {
    size_t end = text.find_first_of(",\n", pos);
    std::string item = text.substr(pos, end - pos);
    size_t dash = item.find('-');
    unsigned a = std::stoul(item.substr(0, dash));
    unsigned b = dash == std::string::npos ? a : std::stoul(item.substr(dash + 1));
    for (unsigned c = a; c <= b; ++c) out.push_back(c);
    pos = end + 1;
  }
  return out;
}

// Renames MON group g (a no-op for a CTRL_MON group) under a CTRL_MON
// group drawn from `groups`, as one of r0..r2.
template <typename Pick>
void move_mon_group(Shell& sh, const std::vector<std::string>& groups, const std::string& g,
                    Pick& pick) {
  if (g.find("mon_groups") == std::string::npos) return;
  std::vector<std::string> ctrl;
  for (const std::string& x : groups)
    if (x.find("mon_groups") == std::string::npos) ctrl.push_back(x);
  sh.mv(g, ctrl[pick(ctrl.size())] + "/mon_groups/r" + std::to_string(pick(3)));
}

}  // namespace

TEST_CASE("random operations keep the invariants", "[groups]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  for (pid_t t = 100; t < 110; ++t) f.tasks.add(t);
  std::mt19937 rng(12345);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> junk = {
      "",          "\n",  "0",    "ff\n",  "1-3\n",       "0x3\n",       "L3:0=3\n",
      "MB:1=30\n", "7\n", " ,\n", "4-7\n", "exclusive\n", "shareable\n", "L3:0=7f0;1=1f\n"};
  for (int step = 0; step < 1500; ++step) {
    std::vector<std::string> groups = group_dirs(sh);
    const std::string g = groups[pick(groups.size())];
    switch (pick(8)) {
      case 0:
        sh.mkdir("/g" + std::to_string(pick(6)));
        break;
      case 1:
        if (!groups.empty() && g.find("mon_groups") == std::string::npos)
          sh.mkdir(g + "/mon_groups/m" + std::to_string(pick(3)));
        break;
      case 2:
        if (!g.empty()) sh.rmdir(g);
        break;
      case 3: {
        std::string list = std::to_string(pick(8));
        if (pick(2)) list += "-" + std::to_string(pick(8));
        sh.echo(g + (pick(2) ? "/cpus_list" : "/cpus"), list);
        break;
      }
      case 4:
        sh.echo(g + "/tasks", std::to_string(100 + pick(10)));
        break;
      case 5: {
        const char* files[] = {"/schemata", "/mode", "/tasks", "/cpus", "/cpus_list"};
        sh.write(g + files[pick(5)], junk[pick(junk.size())]);
        break;
      }
      case 6: {
        std::string data;
        size_t len = pick(40);
        for (size_t i = 0; i < len; ++i) data += static_cast<char>(rng() & 0xff);
        const char* files[] = {"/schemata", "/mode", "/tasks", "/cpus", "/cpus_list"};
        sh.write(g + files[pick(5)], data);
        break;
      }
      case 7:
        move_mon_group(sh, groups, g, pick);
        break;
    }
    // Invariants.
    groups = group_dirs(sh);
    std::vector<int> owner(8, 0);
    std::set<pid_t> listed;
    for (const std::string& d : groups) {
      if (d.find("mon_groups") != std::string::npos) continue;
      for (unsigned c : list_of(sh.cat(d + "/cpus_list"))) ++owner[c];
      std::string tasks = sh.cat(d + "/tasks");
      size_t pos = 0;
      while (pos < tasks.size()) {
        size_t nl = tasks.find('\n', pos);
        pid_t t = std::stoi(tasks.substr(pos, nl - pos));
        INFO("thread " << t << " listed twice");
        REQUIRE(listed.insert(t).second);
        pos = nl + 1;
      }
    }
    for (unsigned c = 0; c < 8; ++c) {
      INFO("step " << step << " cpu " << c);
      REQUIRE(owner[c] == 1);
    }
    REQUIRE(listed.size() == 10);
    for (const std::string& d : groups) {
      size_t at = d.find("/mon_groups/");
      if (at == std::string::npos) continue;
      std::vector<unsigned> mine = list_of(sh.cat(d + "/cpus_list"));
      std::vector<unsigned> parent = list_of(sh.cat(d.substr(0, at) + "/cpus_list"));
      for (unsigned c : mine) REQUIRE(std::count(parent.begin(), parent.end(), c) == 1);
    }
  }
}

// The per-CPU owner tables behind PQR_ASSOC are kept up to date by each
// change rather than recomputed: after every random mkdir, rmdir, cpus
// write, rename and CPU hotplug step, every online CPU's PQR_ASSOC must hold
// the CLOSID of the CTRL_MON group listing it and the RMID of the MON group
// of that group listing it (else the CTRL_MON group's own).
TEST_CASE("PQR_ASSOC follows the CPU owners through random changes and hotplug", "[groups]") {
  MountOptions opts;
  opts.debug = true;  // ctrl_hw_id and mon_hw_id name the tags
  SimFixture f("intel-2s", opts);
  Shell& sh = *f.sh;
  std::mt19937 rng(4242);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::set<unsigned> offline;
  auto hw_id = [&](const std::string& path) { return std::stoul(sh.cat(path)); };
  for (int step = 0; step < 1500; ++step) {
    std::vector<std::string> groups = group_dirs(sh);
    const std::string g = groups[pick(groups.size())];
    switch (pick(7)) {
      case 0:
        sh.mkdir("/g" + std::to_string(pick(5)));
        break;
      case 1:
        if (g.find("mon_groups") == std::string::npos)
          sh.mkdir(g + "/mon_groups/m" + std::to_string(pick(3)));
        break;
      case 2:
        if (!g.empty()) sh.rmdir(g);
        break;
      case 3:
      case 4: {
        std::string list = std::to_string(pick(8));
        if (pick(2)) list += "-" + std::to_string(pick(8));
        sh.echo(g + "/cpus_list", list);
        break;
      }
      case 5:
        move_mon_group(sh, groups, g, pick);
        break;
      case 6: {
        // CPU 0 stays: the kernel never offlines the boot CPU here either.
        const unsigned cpu = 1 + static_cast<unsigned>(pick(7));
        if (offline.count(cpu) != 0) {
          REQUIRE(f.backend.sim->set_cpu_online(cpu, true).ok());
          REQUIRE(f.fs->cpu_online(cpu).ok());
          offline.erase(cpu);
        } else if (f.fs->cpu_offline(cpu).ok()) {
          REQUIRE(f.backend.sim->set_cpu_online(cpu, false).ok());
          offline.insert(cpu);
        }
        break;
      }
    }
    // What each CPU must run with, from the files.
    std::map<unsigned, std::pair<uint32_t, uint32_t>> want;
    groups = group_dirs(sh);
    for (const std::string& d : groups) {
      if (d.find("mon_groups") != std::string::npos) continue;
      const uint32_t closid = d.empty() ? 0 : static_cast<uint32_t>(hw_id(d + "/ctrl_hw_id"));
      const uint32_t rmid = static_cast<uint32_t>(hw_id(d + "/mon_hw_id"));
      for (unsigned c : list_of(sh.cat(d + "/cpus_list"))) want[c] = {closid, rmid};
    }
    for (const std::string& d : groups) {
      size_t at = d.find("/mon_groups/");
      if (at == std::string::npos) continue;
      const uint32_t rmid = static_cast<uint32_t>(hw_id(d + "/mon_hw_id"));
      for (unsigned c : list_of(sh.cat(d + "/cpus_list"))) want[c].second = rmid;
    }
    for (const hw::RegisterValue& r : f.backend.sim->dump_registers()) {
      if (r.msr != 0xc8f || offline.count(r.cpu) != 0) continue;  // IA32_PQR_ASSOC
      INFO("step " << step << " cpu " << r.cpu);
      REQUIRE(want.count(r.cpu) == 1);
      CHECK(static_cast<uint32_t>(r.value >> 32) == want[r.cpu].first);
      CHECK(static_cast<uint32_t>(r.value & 0x3ff) == want[r.cpu].second);
    }
  }
}

}  // namespace resctrlfs::fs::testing
