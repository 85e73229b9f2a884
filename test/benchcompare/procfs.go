package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CPU time from procfs (proc(5)). /proc/<pid>/stat counts a process's user
// and system time (fields 14 and 15, utime and stime, summed over all its
// threads) in clock ticks of sysconf(_SC_CLK_TCK), and the time of its
// waited-for children (fields 16 and 17, cutime and cstime).

// atClkTck is the auxiliary vector entry that carries sysconf(_SC_CLK_TCK).
const atClkTck = 17

// clockTicks is the number of /proc clock ticks per second: the kernel's
// AT_CLKTCK from /proc/self/auxv (what glibc's sysconf(_SC_CLK_TCK)
// returns), else 100, the USER_HZ of every Linux architecture Go supports.
var clockTicks = sync.OnceValue(func() uint64 {
	aux, err := os.ReadFile("/proc/self/auxv")
	if err == nil {
		for len(aux) >= 16 {
			key, val := binary.NativeEndian.Uint64(aux), binary.NativeEndian.Uint64(aux[8:])
			if key == atClkTck && val > 0 {
				return val
			}
			if key == 0 {
				break
			}
			aux = aux[16:]
		}
	}
	return 100
})

// ticks converts clock ticks to a duration.
func ticks(n uint64) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(clockTicks())
}

// procStat is what the benchmark reads from /proc/<pid>/stat.
type procStat struct {
	PPID     int
	CPU      uint64 // utime + stime, in clock ticks
	Children uint64 // cutime + cstime of reaped children, in clock ticks
}

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses the text of /proc/<pid>/stat. The second field, comm,
// is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from its last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat %q: no comm field", b)
	}
	// f[0] is field 3 (state), so field n is f[n-3].
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat %q: %d fields after comm, want ≥ 15", b, len(f))
	}
	var n [5]uint64
	for k, field := range []int{4, 14, 15, 16, 17} {
		v, err := strconv.ParseUint(f[field-3], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat field %d %q: %v", field, f[field-3], err)
		}
		n[k] = v
	}
	return procStat{PPID: int(n[0]), CPU: n[1] + n[2], Children: n[3] + n[4]}, nil
}

// processCPU is the CPU time (user + system) pid has used so far.
func processCPU(pid int) (time.Duration, error) {
	s, err := readStat(pid)
	return ticks(s.CPU), err
}

// children lists the child processes of pid: the union of
// /proc/<pid>/task/<tid>/children over its threads (the file lists the
// children a thread forked; kernels with CONFIG_PROC_CHILDREN), else a scan
// of /proc for processes whose parent is pid.
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	found := false
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue
		}
		found = true
		for f := range strings.FieldsSeq(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	if found {
		return out
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := readStat(c); err == nil && s.PPID == pid {
			out = append(out, c)
		}
	}
	return out
}

// titleNamesDatabase reports whether a PostgreSQL backend's process title
// ("postgres: 15/main: USER DATABASE HOST(PORT) STATE", /proc/<pid>/cmdline
// with update_process_title on, the default) names database db.
func titleNamesDatabase(cmdline []byte, db string) bool {
	for f := range strings.FieldsFuncSeq(string(cmdline), func(r rune) bool { return r == ' ' || r == 0 }) {
		if f == db {
			return true
		}
	}
	return false
}

// backendMeter measures the CPU that the PostgreSQL backends serving one
// database use during a window.
//
// Why this way: the PostgreSQL server is shared (other tests and other
// people use it at the same time), so summing the CPU of every postgres
// process, or the postmaster's cutime/cstime (which collects every exited
// backend's time), would count their work too. Each benchmark run has a
// database of its own, and a backend's process title names its database,
// so the meter picks the postmaster's children whose title names the run's
// database and sums, per backend, the CPU it used inside the window: its
// last reading minus its reading at the start (zero for a backend that
// started inside the window).
//
// A backend that exits inside the window is read for the last time by the
// sample before its exit, so up to one sampling interval of its CPU is
// lost, and a backend that starts and exits between two samples is missed
// entirely; the meter samples every 50 ms and counts the backends it saw
// start and exit so that the report can say when this happened.
// Autovacuum workers of the run's database are counted with the backends
// (their titles name it too): they vacuum and analyze the tables the run
// writes. The postmaster's own work (forking a backend) and the shared
// auxiliary processes (WAL writer, checkpointer, background writer,
// autovacuum launcher) are not counted: they serve every database of the
// server.
//
// The meter also reads the server's CPU as a whole, an upper bound: the
// postmaster's own time, its cutime/cstime (every child it has reaped, so
// a backend that exits inside the window is in it with its whole life) and
// the time of its live children, at both ends of the window. The difference
// counts each process's CPU inside the window exactly once (one alive at
// the start and gone at the end adds its total to cutime and drops its
// start reading from the live sum), but it includes the shared processes
// and every other client of the server.
type backendMeter struct {
	postmaster int
	db         string
	interval   time.Duration

	mu      sync.Mutex
	titles  map[int]bool   // pid → its title names db (cached: a backend serves one database)
	first   map[int]uint64 // pid → CPU ticks at the start of the window (0 if started inside)
	last    map[int]uint64 // pid → CPU ticks at its last sample
	server0 uint64         // serverTicks at the start
	started int            // backends first seen inside the window
	exited  int            // backends seen inside the window that are gone at its end
	stop    chan struct{}
	done    chan struct{}
}

func newBackendMeter(postmaster int, db string) *backendMeter {
	return &backendMeter{postmaster: postmaster, db: db, interval: 50 * time.Millisecond,
		titles: map[int]bool{}, first: map[int]uint64{}, last: map[int]uint64{}}
}

// sample reads the CPU of every backend of the meter's database; at the
// first sample (start) every backend is taken as already running.
func (m *backendMeter) sample(start bool) map[int]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := map[int]bool{}
	for _, pid := range children(m.postmaster) {
		ours, known := m.titles[pid]
		if !known {
			cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil {
				continue
			}
			ours = titleNamesDatabase(cmd, m.db)
			m.titles[pid] = ours
		}
		if !ours {
			continue
		}
		s, err := readStat(pid)
		if err != nil {
			continue // exited since it was listed
		}
		live[pid] = true
		if _, seen := m.last[pid]; !seen {
			if start {
				m.first[pid] = s.CPU
			} else {
				m.first[pid] = 0
				m.started++
			}
		}
		m.last[pid] = s.CPU
	}
	return live
}

// Start takes the window's first sample and keeps sampling until Stop.
func (m *backendMeter) Start() {
	m.server0 = m.serverTicks()
	m.sample(true)
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.sample(false)
			}
		}
	}()
}

// serverTicks is the CPU the whole server has used so far: the postmaster,
// its reaped children and its live ones. The children are listed before the
// postmaster's stat is read, so a child reaped in between is counted twice
// (once live, once in cutime) rather than not at all.
func (m *backendMeter) serverTicks() uint64 {
	kids := children(m.postmaster)
	pm, err := readStat(m.postmaster)
	if err != nil {
		return 0
	}
	sum := pm.CPU + pm.Children
	for _, pid := range kids {
		if s, err := readStat(pid); err == nil && s.PPID == m.postmaster {
			sum += s.CPU
		}
	}
	return sum
}

// backendUsage is what a backendMeter measured.
type backendUsage struct {
	CPU      time.Duration // the run's backends (a lower bound when some exited)
	Server   time.Duration // the whole server (an upper bound)
	Backends int           // backends seen in the window
	Started  int           // of which first seen inside the window
	Exited   int           // of which gone at its end
}

// Stop takes the last sample and returns the backends' CPU in the window.
func (m *backendMeter) Stop() backendUsage {
	close(m.stop)
	<-m.done
	live := m.sample(false)
	server1 := m.serverTicks()
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum uint64
	for pid, last := range m.last {
		sum += last - m.first[pid]
		if !live[pid] {
			m.exited++
		}
	}
	var server time.Duration
	if server1 >= m.server0 {
		server = ticks(server1 - m.server0)
	}
	return backendUsage{CPU: ticks(sum), Server: server, Backends: len(m.last), Started: m.started, Exited: m.exited}
}
