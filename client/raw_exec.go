package client

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// RawExecDriver runs a task as a plain process of the client's user, in
// its own process group, with no isolation (Nomad's raw_exec). Resources
// are recorded, not enforced.
const RawExecDriver = "raw_exec"

// rawExecConfig is a raw_exec task's Config (Nomad's keys).
type rawExecConfig struct {
	command string
	args    []string
}

func parseRawExecConfig(m map[string]any) (rawExecConfig, error) {
	var c rawExecConfig
	for k, v := range m {
		switch k {
		case "command":
			s, err := stringOf(k, v)
			if err != nil {
				return c, err
			}
			c.command = s
		case "args":
			list, ok := v.([]any)
			if !ok {
				if ss, ok2 := v.([]string); ok2 {
					c.args = append([]string(nil), ss...)
					continue
				}
				return c, fmt.Errorf("args: a list of strings is needed, not %T", v)
			}
			for i, a := range list {
				s, err := stringOf(fmt.Sprintf("args[%d]", i), a)
				if err != nil {
					return c, err
				}
				c.args = append(c.args, s)
			}
		}
	}
	if strings.TrimSpace(c.command) == "" {
		return c, errors.New("missing required field \"command\" in raw_exec config")
	}
	return c, nil
}

// exitResult is how a task's process ended. known is false for a process
// re-attached after a client restart: its exit status is not ours to read.
type exitResult struct {
	code   int
	signal int
	known  bool
	err    error
}

// rawProc is a running task process: started here (cmd set) or
// re-attached after a restart (polled by pid and start time).
type rawProc struct {
	pid       int
	startTick uint64 // /proc/<pid>/stat starttime: guards against pid reuse
	cmd       *exec.Cmd
	stdout    *os.File
	stderr    *os.File
}

// taskPaths are the directories and log files of one task of an allocation.
type taskPaths struct {
	allocDir, taskDir, logDir string
}

func (c *Client) taskPaths(allocID, task string) taskPaths {
	allocDir := filepath.Join(c.cfg.DataDir, "alloc", allocID)
	return taskPaths{allocDir: allocDir, taskDir: filepath.Join(allocDir, task), logDir: filepath.Join(allocDir, "alloc", "logs")}
}

// logPath is the file a task's stream is written to (index 0); rotated
// copies are index 1 (newest) up to LogMaxFiles-1 (oldest).
func (p taskPaths) logPath(task, stream string, index int) string {
	return filepath.Join(p.logDir, fmt.Sprintf("%s.%s.%d", task, stream, index))
}

// startRawExec starts a task's process in its own process group, with its
// output appended to its log files (append mode lets the client rotate
// them while the task keeps writing, also across a client restart).
func (c *Client) startRawExec(a *api.Allocation, t *api.Task, cfg rawExecConfig) (*rawProc, error) {
	paths := c.taskPaths(a.ID, t.Name)
	for _, d := range []string{paths.taskDir, paths.logDir} {
		if err := os.MkdirAll(d, allocDirMode); err != nil {
			return nil, fmt.Errorf("failed to build the task directory: %w", err)
		}
	}
	// Directories of an older version may be 0755.
	if err := os.Chmod(paths.allocDir, allocDirMode); err != nil {
		return nil, fmt.Errorf("failed to build the task directory: %w", err)
	}
	open := func(stream string) (*os.File, error) {
		return os.OpenFile(paths.logPath(t.Name, stream, 0), os.O_WRONLY|os.O_CREATE|os.O_APPEND, logFileMode)
	}
	stdout, err := open("stdout")
	if err != nil {
		return nil, err
	}
	stderr, err := open("stderr")
	if err != nil {
		stdout.Close()
		return nil, err
	}
	path := cfg.command
	if !strings.Contains(path, "/") {
		if path, err = exec.LookPath(cfg.command); err != nil {
			stdout.Close()
			stderr.Close()
			return nil, fmt.Errorf("failed to find command %q: %w", cfg.command, err)
		}
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(paths.taskDir, path)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{cfg.command}, cfg.args...),
		Dir:         paths.taskDir,
		Env:         taskEnv(a, t, paths),
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("failed to launch command with executor: %w", err)
	}
	p := &rawProc{pid: cmd.Process.Pid, cmd: cmd, stdout: stdout, stderr: stderr}
	p.startTick, _ = procStartTick(p.pid)
	return p, nil
}

// taskEnv is the task's environment: a few variables of the client's own,
// Nomad's NOMAD_* variables, then the task's Env (which wins).
func taskEnv(a *api.Allocation, t *api.Task, paths taskPaths) []string {
	env := taskEnvMap(a, t, paths)
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// taskEnvMap is taskEnv as a map (what task config interpolates).
func taskEnvMap(a *api.Allocation, t *api.Task, paths taskPaths) map[string]string {
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR", "USER", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	index := ""
	if i := strings.LastIndexByte(a.Name, '['); i >= 0 && strings.HasSuffix(a.Name, "]") {
		index = a.Name[i+1 : len(a.Name)-1]
	}
	env["NOMAD_ALLOC_ID"] = a.ID
	env["NOMAD_ALLOC_NAME"] = a.Name
	env["NOMAD_ALLOC_INDEX"] = index
	env["NOMAD_ALLOC_DIR"] = filepath.Join(paths.allocDir, "alloc")
	env["NOMAD_TASK_DIR"] = paths.taskDir
	env["NOMAD_TASK_NAME"] = t.Name
	env["NOMAD_GROUP_NAME"] = a.TaskGroup
	env["NOMAD_JOB_NAME"] = a.JobID
	env["NOMAD_JOB_ID"] = a.JobID
	env["NOMAD_NAMESPACE"] = a.Namespace
	portEnv(env, a.AllocatedPorts)
	for k, v := range t.Env {
		env[k] = v
	}
	return env
}

// interpolateConfig is a task's Config with ${VAR} replaced by the task
// environment's VAR in every string, as Nomad interpolates driver config
// with the task env; an unknown ${...} is left as is.
func interpolateConfig(v any, env map[string]string) any {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "${") {
			return x
		}
		var b strings.Builder
		for {
			i := strings.Index(x, "${")
			if i < 0 {
				break
			}
			j := strings.IndexByte(x[i:], '}')
			if j < 0 {
				break
			}
			b.WriteString(x[:i])
			if val, ok := env[x[i+2:i+j]]; ok {
				b.WriteString(val)
			} else {
				b.WriteString(x[i : i+j+1])
			}
			x = x[i+j+1:]
		}
		b.WriteString(x)
		return b.String()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = interpolateConfig(e, env)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = interpolateConfig(e, env)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = interpolateConfig(e, env)
		}
		return out
	}
	return v
}

// wait blocks until the process ends. A process started here is reaped;
// a re-attached one is polled (its exit status is then unknown).
func (p *rawProc) wait() exitResult {
	if p.cmd != nil {
		err := p.cmd.Wait()
		p.stdout.Close()
		p.stderr.Close()
		// Whatever the task left in its group goes with it: no orphans.
		p.killGroup()
		res := exitResult{known: true}
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				res.code, res.signal = 128+int(ws.Signal()), int(ws.Signal())
			default:
				res.code = ws.ExitStatus()
			}
		} else if err != nil {
			res.err = err
		}
		return res
	}
	for p.alive() {
		time.Sleep(250 * time.Millisecond)
	}
	p.killGroup()
	return exitResult{}
}

// alive says whether the process still runs (a zombie does not) and is
// still the one started (same start time).
func (p *rawProc) alive() bool {
	tick, state, err := procStat(p.pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		// No /proc: fall back on signal 0.
		return syscall.Kill(p.pid, 0) == nil
	}
	if state == "Z" || state == "X" {
		return false
	}
	return p.startTick == 0 || tick == p.startTick
}

// killGroup kills what is left of the task's process group, unless its ID
// may belong to someone else by now.
func (p *rawProc) killGroup() {
	if groupIsTasks(p.pid, p.startTick) {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

// signal sends sig to the task's whole process group (nothing when the
// group may no longer be the task's: its pid was reused).
func (p *rawProc) signal(sig syscall.Signal) error {
	if !groupIsTasks(p.pid, p.startTick) {
		return nil
	}
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// procStartTick is the process's start time in clock ticks since boot.
func procStartTick(pid int) (uint64, error) {
	t, _, err := procStat(pid)
	return t, err
}

// procStat reads the start time and state letter of /proc/<pid>/stat.
func procStat(pid int) (uint64, string, error) {
	buf, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	s := string(buf)
	// The command name is in parentheses and may hold spaces.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3, starttime field 22 (1-based).
	if len(f) < 20 {
		return 0, "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	tick, err := strconv.ParseUint(f[19], 10, 64)
	return tick, f[0], err
}

// killSignal parses a task's KillSignal (Nomad's default: SIGINT).
func killSignal(name string) (syscall.Signal, error) {
	if name == "" {
		return syscall.SIGINT, nil
	}
	n := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(name), "SIG"))
	if sig, ok := signals[n]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("invalid kill_signal %q", name)
}

var signals = map[string]syscall.Signal{
	"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}
