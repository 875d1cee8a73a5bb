package benchutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// Build compiles ./cmd/ctlplane of the module the working directory is in
// to dir/ctlplane and returns that path. Build output goes to out.
func Build(ctx context.Context, dir string, out io.Writer) (string, error) {
	res, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(res))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", errors.New("must be run inside the ctlplane module (go env GOMOD is empty)")
	}
	bin := filepath.Join(dir, "ctlplane")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ctlplane")
	build.Dir, build.Stdout, build.Stderr = filepath.Dir(gomod), out, out
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building ctlplane: %w", err)
	}
	return bin, nil
}

// NewToken returns a random secret for -acl-initial-management-token.
func NewToken() string { return uuid.NewString() }

// FreeAddr returns a loopback address with a port nothing listens on now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// AgentConfig describes a persistent ctlplane agent to run.
type AgentConfig struct {
	Bin      string // the ctlplane binary
	Name     string // -node
	DataDir  string // -data-dir
	HTTPAddr string // -http-addr, host:port
	RaftAddr string // -bind, host:port
	LogPath  string // stdout and stderr are appended here
	Args     []string
}

// Agent is a ctlplane agent process this tool runs. It can be started again
// after it exits, with the same arguments and data directory.
type Agent struct {
	AgentConfig
	URL string // http://HTTPAddr

	cmd    *exec.Cmd
	exited chan struct{}
}

// StartAgent starts an agent.
func StartAgent(cfg AgentConfig) (*Agent, error) {
	a := &Agent{AgentConfig: cfg, URL: "http://" + cfg.HTTPAddr}
	if err := a.Start(); err != nil {
		return nil, err
	}
	return a, nil
}

// Start runs the agent's process; the previous one must have exited.
func (a *Agent) Start() error {
	if a.cmd != nil && a.Running() {
		return fmt.Errorf("agent %s is still running (pid %d)", a.Name, a.cmd.Process.Pid)
	}
	logFile, err := os.OpenFile(a.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := append([]string{"agent", "-data-dir=" + a.DataDir, "-node=" + a.Name, "-bind=" + a.RaftAddr,
		"-http-addr=" + a.HTTPAddr}, a.Args...)
	fmt.Fprintf(logFile, "=== benchutil: %s starting %s %s\n", time.Now().Format(time.RFC3339Nano), a.Bin, strings.Join(args, " "))
	cmd := exec.Command(a.Bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	a.cmd, a.exited = cmd, exited
	return nil
}

// Pid is the process ID of the agent's current (or last) process.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Exited closes when the current process has exited.
func (a *Agent) Exited() <-chan struct{} { return a.exited }

// Running says whether the current process has not exited yet.
func (a *Agent) Running() bool {
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and returns at once; Wait waits for the exit.
func (a *Agent) Kill() error { return a.cmd.Process.Signal(syscall.SIGKILL) }

// Wait waits for the current process to exit.
func (a *Agent) Wait() { <-a.exited }

// Stop sends SIGTERM and waits for the exit, killing the process if it has
// not exited after timeout. It returns the exit code (-1: killed by a signal).
func (a *Agent) Stop(timeout time.Duration) int {
	if a.Running() {
		a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.exited:
		case <-time.After(timeout):
			fmt.Fprintf(os.Stderr, "benchutil: %s did not exit %s after SIGTERM; killing it\n", a.Name, timeout)
			a.cmd.Process.Kill()
			<-a.exited
		}
	}
	return a.cmd.ProcessState.ExitCode()
}

// PeakRSS is the peak resident set size (VmHWM) of the running process,
// from /proc; an error where there is no /proc.
func (a *Agent) PeakRSS() (int64, error) {
	return procStatusKB(a.cmd.Process.Pid, "VmHWM")
}

func procStatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s %q: %w", field, val, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// LogIssues returns the first max warning, error and panic lines of the
// agent's log, and how many there are.
func (a *Agent) LogIssues(max int) ([]string, int) {
	f, err := os.Open(a.LogPath)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	var lines []string
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); isIssue(line) {
			if n++; n <= max {
				lines = append(lines, Truncate(line, 300))
			}
		}
	}
	return lines, n
}

func isIssue(line string) bool {
	for _, m := range []string{"[WARN]", "[ERROR]", "panic:", "fatal error:"} {
		if strings.Contains(line, m) {
			return true
		}
	}
	return false
}

// BuildRev compiles ./cmd/ctlplane as it was at git revision rev (of the
// repository the working directory is in) to dir/ctlplane-REV, from a copy
// of that revision's tree, so that a change can be measured against the
// code before it in the same run.
func BuildRev(ctx context.Context, dir, rev string, out io.Writer) (string, error) {
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	archive := exec.CommandContext(ctx, "sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "sh", rev, src)
	archive.Stdout, archive.Stderr = out, out
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("extracting revision %s: %w", rev, err)
	}
	bin := filepath.Join(dir, "ctlplane-"+strings.NewReplacer("/", "_", "~", "_", "^", "_").Replace(rev))
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ctlplane")
	build.Dir, build.Stdout, build.Stderr = src, out, out
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building revision %s: %w", rev, err)
	}
	return bin, nil
}
