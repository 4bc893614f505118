"""Helpers for the resctrlfs-exporter integration tests: start the exporter
on a mounted tree (port chosen by the kernel), scrape it, parse the text
format."""

import os
import re
import subprocess
import urllib.request

import resctrlfs_test as rt


def exporter_binary():
    return rt._find_binary("RESCTRLFS_EXPORTER", "exporter/resctrlfs-exporter")


class Exporter:
    """resctrlfs-exporter serving `root` on `listen` (127.0.0.1 and a free
    port by default);
    `wrapper` runs it (["prlimit", "--nofile=64:64", "--"]) and must exec it,
    so that self.proc.pid is the exporter's."""

    def __init__(self, root, args=(), wrapper=(), listen="127.0.0.1:0"):
        self.log_path = os.path.join(os.path.dirname(root), "exporter.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            list(wrapper) + [exporter_binary(), "--root", root, "--listen", listen] +
            list(args),
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            m = rt.wait_until(lambda: re.search(r"on (http://(?:[0-9.]+|\[[0-9a-f:]+\]):\d+)/",
                                                    self.output()),
                              "resctrlfs-exporter to listen",
                              give_up=lambda: rt.exited(self.proc), report=self.output)
        except RuntimeError as e:
            self.stop()
            raise RuntimeError("resctrlfs-exporter did not start (%s): %s" % (e, self.output()))
        self.url = m.group(1)

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def get(self, path):
        with urllib.request.urlopen(self.url + path) as r:  # no timeout: a busy machine is slow
            return r.status, r.headers.get("Content-Type"), r.read().decode()

    def metrics(self):
        return self.get("/metrics")[2]

    def address(self):
        host, port = self.url[len("http://"):].split(":")
        return host, int(port)

    def stop(self):
        rt.stop_process(self.proc)
        self.log.close()
        return self.proc.returncode


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse(text):
    """Samples of an exposition: [(name, {label: value}, float_or_int)]."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise AssertionError("not a sample line: %r" % line)
        labels = {}
        if m.group(2):
            pos = 0
            while pos < len(m.group(2)):
                lm = _LABEL.match(m.group(2), pos)
                if not lm:
                    raise AssertionError("bad labels: %r" % line)
                labels[lm.group(1)] = lm.group(2).replace('\\"', '"').replace("\\n", "\n") \
                    .replace("\\\\", "\\")
                pos = lm.end()
        v = m.group(3)
        out.append((m.group(1), labels, int(v) if re.fullmatch(r"\d+", v) else float(v)))
    return out


def select(samples, name, **labels):
    return [s for s in samples if s[0] == name and all(s[1].get(k) == v for k, v in labels.items())]


def one(samples, name, **labels):
    found = select(samples, name, **labels)
    if len(found) != 1:
        raise AssertionError("%d samples of %s %s" % (len(found), name, labels))
    return found[0][2]
