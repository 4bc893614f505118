// rdtclient drives github.com/intel/goresctrl/pkg/rdt (Debian's sources,
// built offline in GOPATH mode) the way containerd and CRI-O do: it
// initialises rdt from the resctrl mount found in /proc/mounts, configures
// classes from a YAML config file, assigns a process to a class and to a
// monitoring group, and reads monitoring data. It prints what it did as
// `key value` lines for the test to compare with the resctrl tree.
//
// usage: rdtclient CONFIG.yaml CLASS PID
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/intel/goresctrl/pkg/rdt"
)

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "rdtclient: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		die("usage: rdtclient CONFIG.yaml CLASS PID")
	}
	config, className, pid := os.Args[1], os.Args[2], os.Args[3]

	if err := rdt.Initialize(""); err != nil {
		die("initialize: %v", err)
	}
	fmt.Println("initialized yes")
	if err := rdt.SetConfigFromFile(config, true); err != nil {
		die("config: %v", err)
	}
	var names []string
	for _, c := range rdt.GetClasses() {
		names = append(names, c.Name())
	}
	sort.Strings(names)
	fmt.Printf("classes %s\n", strings.Join(names, ","))

	cls, ok := rdt.GetClass(className)
	if !ok {
		die("no class %q", className)
	}
	if err := cls.AddPids(pid); err != nil {
		die("assign %s to %s: %v", pid, className, err)
	}
	pids, err := cls.GetPids()
	if err != nil {
		die("pids of %s: %v", className, err)
	}
	fmt.Printf("class_pids %s\n", strings.Join(pids, ","))

	if !rdt.MonSupported() {
		fmt.Println("monitoring no")
		return
	}
	feats := rdt.GetMonFeatures()[rdt.MonResourceL3]
	sort.Strings(feats)
	fmt.Printf("mon_features %s\n", strings.Join(feats, ","))
	mg, err := cls.CreateMonGroup("mon1", map[string]string{"test": "client"})
	if err != nil {
		die("create mon group: %v", err)
	}
	if err := mg.AddPids(pid); err != nil {
		die("assign %s to mon group: %v", pid, err)
	}
	mpids, err := mg.GetPids()
	if err != nil {
		die("pids of mon group: %v", err)
	}
	fmt.Printf("mon_pids %s\n", strings.Join(mpids, ","))
	// Sample the way a monitoring agent does, after the task has run under
	// the new RMID for a while: a freshly assigned RMID owns no cache lines
	// yet, so an immediate read of llc_occupancy is legitimately 0.
	time.Sleep(time.Second)
	for _, g := range []rdt.ResctrlGroup{mg, cls} {
		data := g.GetMonData()
		var ids []uint64
		for id := range data.L3 {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			leaf := data.L3[id]
			var keys []string
			for k := range leaf {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Printf("mon_data %s %d %s %d\n", g.Name(), id, k, leaf[k])
			}
		}
	}
}
