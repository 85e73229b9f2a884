package ratelimit_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// EnvPGBin names the directory of PostgreSQL's server binaries (initdb,
// pg_ctl) for TestPostgresStopped; by default the newest
// /usr/lib/postgresql/<version>/bin (Debian's layout) is used.
const EnvPGBin = "MCPGATE_PG_BIN"

// cluster is a PostgreSQL server of one test's own, in a temporary
// directory, which the test may stop and start. As root it runs as the
// postgres user, since PostgreSQL refuses to run as root.
type cluster struct {
	bin, dir string
	port     int
	runAs    string // "" for the current user
}

// startCluster creates and starts a cluster, stopped again when t ends. It
// skips t when no server binaries are installed.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := pgBin()
	if bin == "" {
		t.Skip("no PostgreSQL server binaries (initdb, pg_ctl) found; install postgresql or set " + EnvPGBin)
	}
	dir, err := os.MkdirTemp("", "mcpgate-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &cluster{bin: bin, dir: dir, port: freePort(t)}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		u, err := user.Lookup(c.runAs)
		if err != nil {
			t.Skipf("running as root needs the postgres user to start a cluster: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c.run(t, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	c.start(t)
	t.Cleanup(func() { _ = c.cmd("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop").Run() })
	return c
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// url is the cluster's postgres database, with a short connect timeout so
// that a stopped server refuses calls quickly.
func (c *cluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", c.port)
}

// start starts the server and waits until it accepts connections.
func (c *cluster) start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", c.port, c.dir)
	c.run(t, "pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start")
}

// stop stops the server the way an operator would (fast: sessions are
// terminated, then the server shuts down cleanly).
func (c *cluster) stop(t *testing.T) {
	t.Helper()
	c.run(t, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
}

func (c *cluster) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.runAs != "" {
		return exec.Command("runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (c *cluster) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := c.cmd(name, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		t.Fatalf("%s %v: %v\n%s\nserver log:\n%s", name, args, err, out, log)
	}
}

// pgBin finds the server binaries: EnvPGBin, else the newest Debian
// /usr/lib/postgresql/<version>/bin that has initdb.
func pgBin() string {
	if dir := os.Getenv(EnvPGBin); dir != "" {
		return dir
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	if len(dirs) == 0 {
		return ""
	}
	return filepath.Dir(dirs[0])
}

// version is the major version in a /usr/lib/postgresql/<version>/bin path.
func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
