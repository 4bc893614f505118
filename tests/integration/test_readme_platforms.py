#!/usr/bin/env python3
"""The "Built-in platforms" table of docs/platforms.md says what each
built-in simulated platform boots: checked here against the mounted trees
(CPUs, L3 domains, CBM lengths, CLOSIDs, RMIDs and the features that show in
the tree). The README's quick start runs as written after `./dev.sh mount`
(a daemon on the default platform with the control socket dev.sh gives it),
with its mount point, socket and build/ paths replaced by the test's."""

import os
import re
import subprocess
import tempfile

import resctrlfs_test as rt

README = os.path.join(rt.REPO, "README.md")
PLATFORMS = os.path.join(rt.REPO, "docs", "platforms.md")


def readme(path=README):
    with open(path) as f:
        return f.read()


def section(text, title):
    i = text.index("\n## " + title + "\n")
    j = text.find("\n## ", i + 1)
    return text[i:j if j >= 0 else len(text)]


def table(sec):
    rows = [l for l in sec.splitlines() if l.startswith("| `")]
    out = {}
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        out[cells[0].strip("`")] = cells
    return out


def pairs(cell):
    """'L3 16, MB 8' -> {'L3': 16, 'MB': 8}; 'none' -> {}."""
    if cell == "none":
        return {}
    return {k: int(v) for k, v in (p.split() for p in cell.split(", "))}


class ReadmePlatforms(rt.unittest.TestCase):
    def facts(self, m):
        f = {}
        f["cpus"] = 0
        for r in m.read("cpus_list").strip().split(","):
            lo, _, hi = r.partition("-")
            f["cpus"] += int(hi or lo) - int(lo) + 1
        info = m.listdir("info")
        schemas = [s for s in info if s in ("L3", "L2", "MB", "SMBA")]
        f["cbm"] = {s: bin(int(m.read("info/%s/cbm_mask" % s), 16)).count("1")
                    for s in ("L3", "L2") if s in schemas}
        f["closids"] = {s: int(m.read("info/%s/num_closids" % s)) for s in schemas}
        mon = "L3_MON" in info
        f["rmids"] = None
        if mon:
            f["rmids"] = int(m.read("info/L3_MON/num_rmids"))
            if "PERF_PKG_MON" in info:
                f["rmids"] = min(f["rmids"], int(m.read("info/PERF_PKG_MON/num_rmids")))
            f["l3_domains"] = len([d for d in m.listdir("mon_data") if d.startswith("mon_L3_")])
        else:
            line = [l for l in m.read("schemata").splitlines() if l.strip().startswith("L3:")]
            f["l3_domains"] = line[0].count("=") if line else 0
        feats = set()
        if "MB" in schemas:
            feats.add("MBA")
        if "SMBA" in schemas:
            feats.add("SMBA")
        if mon and m.read("info/L3_MON/mbm_assign_mode").startswith("[mbm_event]"):
            feats.add("ABMC")
            self.assertEqual(m.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        if mon and "mbm_total_bytes_config" in m.listdir("info/L3_MON"):
            feats.add("BMEC")
        if "L3" in schemas and "io_alloc" in m.listdir("info/L3"):
            feats.add("SDCIAE")
        if mon and any(d.startswith("mon_sub_L3_") for d in m.listdir("mon_data/mon_L3_00")):
            feats.add("SNC")
        if "PERF_PKG_MON" in info:
            feats.add("telemetry")
        if mon and m.read("info/L3_MON/mon_features") == "llc_occupancy\n":
            feats.add("llc_occupancy only")
        if "L3" in schemas or "L2" in schemas:
            self.assertEqual(m.mkdir("p"), 0)
            if m.write("p/mode", "pseudo-locksetup\n") == 0:
                feats.add("pseudo-locking")
            m.rmdir("p")
        return f, feats

    def test_table_matches_the_trees(self):
        rows = table(section(readme(PLATFORMS), "Built-in platforms"))
        self.assertIn("host", rows)
        for name, cells in rows.items():
            if name == "host":
                continue
            if rt.MSR and "MPAM" in cells[1]:
                continue  # the msr path emulates x86 CPU drivers only
            with self.subTest(platform=name):
                m = rt.Mount(platform=name)
                try:
                    f, feats = self.facts(m)
                    # Try the CDP mount options where the row claims them.
                    for opt, res in (("cdp", "L3CODE"), ("cdpl2", "L2CODE")):
                        m2 = None
                        try:
                            m2 = rt.Mount(platform=name, options=[opt])
                            if res in m2.listdir("info"):
                                feats.add("CDP" if opt == "cdp" else "CDP (L2)")
                        except RuntimeError:
                            pass
                        finally:
                            if m2 is not None:
                                m2.cleanup()
                finally:
                    m.cleanup()
                _, _, cpus, doms, cbm, closids, rmids, features = cells
                self.assertEqual(f["cpus"], int(cpus))
                self.assertEqual(f["l3_domains"], int(doms))
                self.assertEqual(f["cbm"], pairs(cbm))
                self.assertEqual(f["closids"], pairs(closids))
                want = set(x.strip() for x in features.split(","))
                self.assertEqual(f["rmids"], None if rmids == "none" else int(rmids))
                self.assertEqual(feats, want)

    def test_quick_start_runs(self):
        sec = section(readme(), "Quick start")
        block = re.search(r"```sh\n(.*?)```", sec, re.S).group(1)
        lines = [l for l in block.splitlines() if l.strip()]
        self.assertLessEqual(len(lines), 10, block)
        # What ./dev.sh mount does (dev.sh "mount"): the daemon on the
        # default platform with its control socket at /run/resctrlfsd.sock.
        with open(os.path.join(rt.REPO, "dev.sh")) as f:
            self.assertIn("--control /run/resctrlfsd.sock", f.read())
        self.assertTrue(lines[0].startswith("M="), lines[0])
        d = tempfile.mkdtemp(prefix="resctrlfs-readme-")
        mnt = os.path.join(d, "mnt")
        os.mkdir(mnt)
        sock = os.path.join(d, "rfs.sock")
        daemon = rt.daemon_binary()

        def ours(l):
            l = l.replace("/run/resctrlfsd.sock", sock)
            return l.replace("build/daemon/resctrlfsctl", rt.ctl_binary())

        script = ["M=" + mnt] + [ours(l) for l in lines[1:]]
        # Up to the counter's read, then the rest (rmdir, unmount).
        k = next(i for i, l in enumerate(script) if "mbm_total_bytes" in l) + 1
        try:
            up = subprocess.run([daemon, "--control", sock, "--boot-state-dir", "", mnt],
                                capture_output=True, text=True)
            self.assertEqual(up.returncode, 0, up.stderr)
            out = subprocess.run(["sh", "-ec", "\n".join(script[:k])], capture_output=True,
                                 text=True, cwd=rt.REPO)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            count = int(out.stdout.split()[-1])
            # At least 3 s of 1000 MB/s ran between the workload and the read.
            self.assertGreaterEqual(count, 2.9e9)
            rest = subprocess.run(["sh", "-ec", "\n".join(script[:1] + script[k:])],
                                  capture_output=True, text=True, cwd=rt.REPO)
            self.assertEqual(rest.returncode, 0, rest.stdout + rest.stderr)
            # Its last line unmounts; the daemon exits.
            rt.wait_until(lambda: not rt.is_mounted(mnt), "the quick start's unmount")
        finally:
            if rt.is_mounted(mnt):
                subprocess.call(["fusermount3", "-u", mnt])
            for _ in range(100):
                if not rt.is_mounted(mnt):
                    break
                rt.time.sleep(0.1)
            if not rt.is_mounted(mnt):
                subprocess.call(["rm", "-rf", d])

if __name__ == "__main__":
    rt.main()
