package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100
// on every Linux build that matters here.
const clockTick = 10 * time.Millisecond

// procStat is what the benchmark reads from /proc/<pid>/stat.
type procStat struct {
	comm                   string
	ppid                   int
	utime, stime           int64 // this process, in ticks
	cutime, cstime         int64 // its children that exited and were waited for
	cpuTicksIncludingReaps int64
}

// readStat parses /proc/<pid>/stat. The command name is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[closing+1:]))
	if len(f) < 15 { // f[0] is field 3 (state)
		return procStat{}, fmt.Errorf("/proc/%d/stat: only %d fields", pid, len(f))
	}
	num := func(i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
	s := procStat{comm: string(b[open+1 : closing]), ppid: int(num(1)),
		utime: num(11), stime: num(12), cutime: num(13), cstime: num(14)}
	s.cpuTicksIncludingReaps = s.utime + s.stime + s.cutime + s.cstime
	return s, nil
}

// procCPU is the CPU time (user + system) a process has used so far.
func procCPU(pid int) (time.Duration, error) {
	s, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return time.Duration(s.utime+s.stime) * clockTick, nil
}

// procPeakRSS is the peak resident set size of a process (VmHWM), in kB.
func procPeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM line", pid)
}

// groupCPU is the CPU time used so far by every process named comm (for
// PostgreSQL: the postmaster, its live backends, and through the
// postmaster's cutime/cstime the backends that have exited). Reading it
// before and after a run gives the server's share of the run.
func groupCPU(comm string) time.Duration {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		s, err := readStat(pid)
		if err != nil || s.comm != comm {
			continue
		}
		parent, err := readStat(s.ppid)
		if err == nil && parent.comm == comm {
			ticks += s.utime + s.stime // a child: its reaped time is in the parent
		} else {
			ticks += s.cpuTicksIncludingReaps
		}
	}
	return time.Duration(ticks) * clockTick
}

// selfCPU is the CPU time of this process (the load generator).
func selfCPU() time.Duration {
	d, _ := procCPU(os.Getpid())
	return d
}
