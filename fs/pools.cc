// Implements the CLOSID and RMID pools of pools.h.
#include "fs/pools.h"

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <optional>

namespace resctrlfs::fs {

void ClosidPool::init(unsigned count) {
  allocated_.assign(count, false);
  if (count > 0) allocated_[0] = true;
}

Result<uint32_t> ClosidPool::alloc() {
  for (uint32_t c = 1; c < allocated_.size(); ++c) {
    if (!allocated_[c]) {
      allocated_[c] = true;
      return c;
    }
  }
  return Error::make(ENOSPC);
}

Result<uint32_t> ClosidPool::alloc_cleanest(const std::function<unsigned(uint32_t)>& dirty) {
  std::optional<uint32_t> best;
  unsigned best_dirty = 0;
  for (uint32_t c = 1; c < allocated_.size(); ++c) {
    if (allocated_[c]) continue;
    const unsigned n = dirty(c);
    if (n == 0) {
      best = c;
      break;
    }
    if (!best || n < best_dirty) {
      best = c;
      best_dirty = n;
    }
  }
  if (!best) return Error::make(ENOSPC);
  allocated_[*best] = true;
  return *best;
}

bool ClosidPool::claim(uint32_t closid) {
  if (closid >= allocated_.size() || allocated_[closid]) return false;
  allocated_[closid] = true;
  return true;
}

void ClosidPool::free(uint32_t closid) {
  if (closid != 0 && closid < allocated_.size()) allocated_[closid] = false;
}

unsigned ClosidPool::free_count() const {
  return static_cast<unsigned>(std::count(allocated_.begin(), allocated_.end(), false));
}

void RmidPool::init(unsigned num_rmids, std::vector<int> domains, bool use_limbo, uint32_t reserved,
                    ClosidOf closid_of) {
  num_rmids_ = num_rmids;
  use_limbo_ = use_limbo;
  reserved_ = reserved;
  closid_of_ = std::move(closid_of);
  domains_ = std::move(domains);
  free_.clear();
  busy_.clear();
  busy_count_.clear();
  for (uint32_t r = 0; r < num_rmids; ++r)
    if (r != reserved_) free_.push_back(r);
}

Result<uint32_t> RmidPool::alloc(uint32_t closid) {
  if (free_.empty()) return Error::make(busy_count_.empty() ? ENOSPC : EBUSY);
  auto it = free_.begin();
  if (closid_of_) {
    it = std::find_if(free_.begin(), free_.end(),
                      [&](uint32_t idx) { return closid_of_(idx) == closid; });
    if (it == free_.end()) return Error::make(ENOSPC);
  }
  uint32_t r = *it;
  free_.erase(it);
  return r;
}

unsigned RmidPool::dirty_count(uint32_t closid) const {
  if (!closid_of_) return 0;
  unsigned n = 0;
  for (const auto& [idx, count] : busy_count_)
    if (closid_of_(idx) == closid) ++n;
  return n;
}

bool RmidPool::claim(uint32_t rmid) {
  auto it = std::find(free_.begin(), free_.end(), rmid);
  if (it != free_.end()) {
    free_.erase(it);
    return true;
  }
  if (busy_count_.erase(rmid) == 0) return false;
  for (auto& [dom, rmids] : busy_) rmids.erase(rmid);
  return true;
}

bool RmidPool::restore(const std::vector<uint32_t>& free_order,
                       const std::map<int, std::set<uint32_t>>& busy) {
  std::vector<bool> seen(num_rmids_, false);
  for (uint32_t r : free_order) {
    if (r == reserved_ || r >= num_rmids_ || seen[r]) return false;
    seen[r] = true;
  }
  std::map<uint32_t, unsigned> counts;
  for (const auto& [dom, rmids] : busy) {
    if (std::find(domains_.begin(), domains_.end(), dom) == domains_.end()) return false;
    for (uint32_t r : rmids) {
      if (r == reserved_ || r >= num_rmids_ || (seen[r] && counts.count(r) == 0)) return false;
      ++counts[r];
    }
  }
  for (auto& [r, n] : counts) seen[r] = true;
  for (uint32_t r = 0; r < num_rmids_; ++r)
    if (r != reserved_ && !seen[r]) return false;
  free_.assign(free_order.begin(), free_order.end());
  busy_.clear();
  for (const auto& [dom, rmids] : busy)
    if (!rmids.empty()) busy_[dom] = rmids;
  busy_count_ = std::move(counts);
  return true;
}

void RmidPool::free(uint32_t rmid) {
  if (rmid == reserved_ || rmid >= num_rmids_) return;
  if (!use_limbo_ || domains_.empty()) {
    free_.push_back(rmid);
    return;
  }
  for (int d : domains_) {
    if (busy_[d].insert(rmid).second) ++busy_count_[rmid];
  }
}

void RmidPool::unbusy(int domain, uint32_t rmid) {
  auto it = busy_count_.find(rmid);
  if (it == busy_count_.end()) return;
  if (--it->second == 0) {
    busy_count_.erase(it);
    free_.push_back(rmid);
  }
}

void RmidPool::check_limbo(int domain, const std::function<bool(int, uint32_t)>& dirty) {
  auto it = busy_.find(domain);
  if (it == busy_.end()) return;
  std::vector<uint32_t> clean;
  for (uint32_t r : it->second)
    if (!dirty(domain, r)) clean.push_back(r);
  for (uint32_t r : clean) {
    it->second.erase(r);
    unbusy(domain, r);
  }
}

void RmidPool::force_clear(int domain) {
  auto it = busy_.find(domain);
  if (it == busy_.end()) return;
  std::set<uint32_t> rmids = std::move(it->second);
  it->second.clear();
  for (uint32_t r : rmids) unbusy(domain, r);
}

void RmidPool::add_domain(int domain) {
  auto pos = std::lower_bound(domains_.begin(), domains_.end(), domain);
  if (pos == domains_.end() || *pos != domain) domains_.insert(pos, domain);
}

void RmidPool::remove_domain(int domain) {
  force_clear(domain);
  busy_.erase(domain);
  std::erase(domains_, domain);
}

bool RmidPool::has_busy(int domain) const {
  auto it = busy_.find(domain);
  return it != busy_.end() && !it->second.empty();
}

RmidPool::Released RmidPool::after_freeing(const std::vector<uint32_t>& rmids) const {
  Released r;
  r.free.assign(free_.begin(), free_.end());
  // free() ignores the reserved index and numbers past the pool.
  std::vector<uint32_t> freed;
  freed.reserve(rmids.size());
  for (uint32_t rmid : rmids)
    if (rmid != reserved_ && rmid < num_rmids_) freed.push_back(rmid);
  if (!use_limbo_ || domains_.empty()) {
    r.free.insert(r.free.end(), freed.begin(), freed.end());
    return r;
  }
  std::sort(freed.begin(), freed.end());
  freed.erase(std::unique(freed.begin(), freed.end()), freed.end());
  // Into limbo in every domain of the pool, with what is busy there already.
  for (int d : domains_) {
    auto it = busy_.find(d);
    std::vector<uint32_t> all;
    if (it == busy_.end()) {
      all = freed;
    } else {
      all.reserve(it->second.size() + freed.size());
      std::set_union(it->second.begin(), it->second.end(), freed.begin(), freed.end(),
                     std::back_inserter(all));
    }
    if (!all.empty()) r.limbo.emplace(d, std::move(all));
  }
  return r;
}

void RmidPool::append_state(std::vector<uint32_t>& out) const {
  out.push_back(num_rmids_);
  out.push_back(use_limbo_ ? 1 : 0);
  out.push_back(static_cast<uint32_t>(domains_.size()));
  for (int d : domains_) out.push_back(static_cast<uint32_t>(d));
  out.push_back(static_cast<uint32_t>(free_.size()));
  out.insert(out.end(), free_.begin(), free_.end());
  out.push_back(static_cast<uint32_t>(busy_.size()));
  for (const auto& [d, rmids] : busy_) {
    out.push_back(static_cast<uint32_t>(d));
    out.push_back(static_cast<uint32_t>(rmids.size()));
    out.insert(out.end(), rmids.begin(), rmids.end());
  }
}

std::vector<uint32_t> RmidPool::busy_in(int domain) const {
  auto it = busy_.find(domain);
  if (it == busy_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

}  // namespace resctrlfs::fs
