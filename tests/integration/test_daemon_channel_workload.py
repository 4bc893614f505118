#!/usr/bin/env python3
"""`resctrlfsctl workload --channel N` (ours): a device workload on an I/O
RDT channel of the intel-gnr-io platform. An unknown channel and a platform
without I/O RDT are refused with an error. Until the channels are tagged and
I/O tagging is enabled (only the `iordt` mount option does that), a
device's traffic is counted in no group, while a CPU's is. Under the msr
label the daemon refuses the request (its backend is not simulated) and
resctrl-fakehw, which holds the machine, runs the device workloads."""

import subprocess

import resctrlfs_test as rt

ROOT_L3_0 = "mon_data/mon_L3_00/mbm_total_bytes"


class ChannelWorkloads(rt.ResctrlfsTestCase):
    PLATFORM = "intel-gnr-io"
    MANUAL_CLOCK = True

    def run_ctl(self, *args):
        return subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "workload"] +
                              list(args), capture_output=True, text=True)

    def test_channel_workload_is_accepted_and_unknown_refused(self):
        out = self.run_ctl("--channel", "0x100", "--footprint", "1048576", "--bandwidth", "500")
        if rt.MSR:
            self.assertNotEqual(out.returncode, 0, out.stdout)
            self.assertIn("the backend is not simulated", out.stdout + out.stderr)
            # The machine (resctrl-fakehw) runs device workloads and refuses
            # an unknown channel the same way.
            self.assertTrue(self.fs.hw.ctl({"cmd": "workload", "channel": 0x100,
                                            "bandwidth_mbps": 500})["ok"])
            r = self.fs.hw.ctl({"cmd": "workload", "channel": 0x103, "bandwidth_mbps": 500})
            self.assertFalse(r["ok"], r)
            self.assertIn("no I/O RDT channel 259", r["error"])
            return
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        out = self.run_ctl("--channel", "0x103", "--bandwidth", "500")
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("no I/O RDT channel 259", out.stdout + out.stderr)
        out = self.run_ctl("--channel", "1", "--cpu", "0")
        self.assertNotEqual(out.returncode, 0, out.stdout)

    def test_device_traffic_counts_nowhere_until_tagging_is_enabled(self):
        # The control request resctrlfsctl sends; under the msr label it goes
        # to resctrl-fakehw, which holds the machine.
        self.ctl_ok({"cmd": "workload", "channel": 0x100, "bandwidth_mbps": 1000})
        self.advance(2000)
        self.assertEqual(int(self.read(ROOT_L3_0)), 0)
        # A CPU workload on the same L3 is counted in the default group.
        self.ctl_ok({"cmd": "workload", "cpu": 1, "bandwidth_mbps": 1000})
        self.advance(2000)
        self.assertAlmostEqual(int(self.read(ROOT_L3_0)), 2e9, delta=2e9 * 0.02)


class NoChannels(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"

    def test_platform_without_io_rdt_refuses(self):
        r = self.ctl({"cmd": "workload", "channel": 256, "bandwidth_mbps": 100})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("no I/O RDT channels", r.get("error", ""))


if __name__ == "__main__":
    rt.main()
