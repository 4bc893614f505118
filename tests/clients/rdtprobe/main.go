// rdtprobe detects resctrl the way runc >= 1.2, crun >= 1.10 and cAdvisor
// do, using only Go's standard library: statfs("/sys/fs/resctrl") and
// fstatfs of an fd opened there must report RDTGROUP_SUPER_MAGIC, and
// /proc/thread-self/mountinfo, read from a locked OS thread that is not the
// main thread, must list a mount of type resctrl at /sys/fs/resctrl.
// It prints one `PASS|FAIL check: detail` line per check and exits 0 only
// if every check passed.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
)

const rdtgroupSuperMagic = 0x7655821
const root = "/sys/fs/resctrl"

func init() {
	// Keeps the main goroutine on the main thread, so that any other
	// goroutine that locks its thread runs on a thread that is not main.
	runtime.LockOSThread()
}

var failed bool

func report(name string, ok bool, format string, args ...interface{}) {
	word := "PASS"
	if !ok {
		word = "FAIL"
		failed = true
	}
	fmt.Printf("%s %s: %s\n", word, name, fmt.Sprintf(format, args...))
}

func statfsCheck() {
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		report("statfs", false, "%v", err)
		return
	}
	report("statfs", st.Type == rdtgroupSuperMagic, "f_type 0x%x bsize %d namelen %d",
		st.Type, st.Bsize, st.Namelen)
}

func fstatfsCheck() {
	fd, err := syscall.Open(root+"/schemata", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		report("fstatfs", false, "open: %v", err)
		return
	}
	defer syscall.Close(fd)
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &st); err != nil {
		report("fstatfs", false, "%v", err)
		return
	}
	report("fstatfs", st.Type == rdtgroupSuperMagic, "f_type 0x%x", st.Type)
}

// mountinfoCheck parses the calling thread's mountinfo as runc's mountinfo
// package does: the fields after " - " are fstype, source, super options.
func mountinfoCheck() (string, bool) {
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return err.Error(), false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		pre := strings.Fields(line[:sep])
		post := strings.Fields(line[sep+3:])
		if len(pre) < 5 || len(post) < 3 || pre[4] != root {
			continue
		}
		return fmt.Sprintf("fstype %s source %s options %s", post[0], post[1], post[2]),
			post[0] == "resctrl" && post[1] == "resctrl"
	}
	return "no mount at " + root, false
}

func main() {
	statfsCheck()
	fstatfsCheck()
	type result struct {
		tid    int
		detail string
		ok     bool
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		detail, ok := mountinfoCheck()
		done <- result{syscall.Gettid(), detail, ok}
	}()
	r := <-done
	pid := syscall.Getpid()
	report("thread", r.tid != pid, "mountinfo read on thread %d of process %d", r.tid, pid)
	report("mountinfo", r.ok, "%s", r.detail)
	if failed {
		os.Exit(1)
	}
}
