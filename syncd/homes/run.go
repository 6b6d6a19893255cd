package homes

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Runner runs one command line (argv, no shell) and returns its
// standard output; an error carries the first line of standard error.
type Runner func(ctx context.Context, argv []string) (string, error)

// ExecRunner runs argv with os/exec, within ctx.
func ExecRunner(ctx context.Context, argv []string) (string, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("empty command")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The tool runs in a process group of its own, killed whole when ctx
	// ends: a CLI's children (a shell script's, a helper mount) neither
	// outlive the pass nor hold its pipes open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 3 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("%s: no answer in time (%v)", argv[0], ctx.Err())
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		msg, _, _ = strings.Cut(msg, "\n")
		if msg == "" {
			msg = err.Error()
		}
		return stdout.String(), fmt.Errorf("%s: %s", strings.Join(argv, " "), msg)
	}
	return stdout.String(), nil
}
