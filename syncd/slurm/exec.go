package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// CommandTimeout bounds one sacctmgr or squeue run.
var CommandTimeout = 5 * time.Minute

// Exec runs sacctmgr and squeue and counts the runs.
type Exec struct {
	Sacctmgr string
	Squeue   string
	Scontrol string
	Log      logrus.FieldLogger
	calls    atomic.Int64
}

// NewExec returns an Exec for cfg's binaries.
func NewExec(cfg Config, log logrus.FieldLogger) *Exec {
	if log == nil {
		log = logrus.StandardLogger()
	}
	scontrol := cfg.Scontrol
	if scontrol == "" {
		scontrol = DefaultScontrol
	}
	return &Exec{Sacctmgr: cfg.Sacctmgr, Squeue: cfg.Squeue, Scontrol: scontrol, Log: log}
}

// Calls is the number of sacctmgr runs so far.
func (e *Exec) Calls() int { return int(e.calls.Load()) }

func (e *Exec) run(ctx context.Context, bin string, args ...string) (stdout, stderr string, err error) {
	return e.runIn(ctx, "", bin, args...)
}

func (e *Exec) runIn(ctx context.Context, stdin, bin string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, CommandTimeout)
	defer cancel()
	var o, se bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &se
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err = cmd.Run()
	return o.String(), se.String(), err
}

// Read runs `sacctmgr -nP ARGS...` and returns its output.
func (e *Exec) Read(ctx context.Context, args ...string) (string, error) {
	e.calls.Add(1)
	full := append([]string{"-nP"}, args...)
	out, serr, err := e.run(ctx, e.Sacctmgr, full...)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", e.Sacctmgr, strings.Join(full, " "), err, oneLine(serr+out))
	}
	return out, nil
}

// SlurmConfig runs `scontrol show config` (for the lint).
func (e *Exec) SlurmConfig(ctx context.Context) (string, error) {
	out, serr, err := e.run(ctx, e.Scontrol, "show", "config")
	if err != nil {
		return "", fmt.Errorf("%s show config: %w: %s", e.Scontrol, err, oneLine(serr+out))
	}
	return out, nil
}

// Jobs runs squeue for the jobs that are not finished.
func (e *Exec) Jobs(ctx context.Context) (string, error) {
	out, serr, err := e.run(ctx, e.Squeue, squeueArgs()...)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", e.Squeue, strings.Join(squeueArgs(), " "), err, oneLine(serr+out))
	}
	return out, nil
}

// unchanged are sacctmgr's answers (with exit status 1) to a command that
// had nothing to do: success for an idempotent reconciler.
var unchanged = []string{"Nothing new added", "Nothing deleted", "Nothing modified"}

// ErrCommand is wrapped by the error of a failed step.
var ErrCommand = errors.New("sacctmgr command failed")

// Apply runs one step as `sacctmgr -i ARGS...`. changed is false when
// sacctmgr said there was nothing to do.
func (e *Exec) Apply(ctx context.Context, s Step) (changed bool, err error) {
	changed, _, err = e.ApplyOut(ctx, s)
	return changed, err
}

// ApplyOut is Apply that also returns what the command printed on
// stdout (the end of it for a load), for proof.go.
func (e *Exec) ApplyOut(ctx context.Context, s Step) (changed bool, stdout string, err error) {
	if s.Bin != "" {
		out, serr, err := e.run(ctx, s.Bin, s.Args...)
		if err != nil {
			return false, "", fmt.Errorf("%w: %s: %v: %s", ErrCommand, s.Command(e.Sacctmgr), err, oneLine(serr+out))
		}
		return true, out, nil
	}
	e.calls.Add(1)
	full := append([]string{"-i"}, s.Args...)
	out, serr, err := e.runIn(ctx, s.Stdin, e.Sacctmgr, full...)
	if s.Stdin != "" {
		// load echoes every entity it adds: keep its end (the errors and
		// the summary) for messages. It says "Nothing new added." with
		// exit status 0 when everything was there.
		if len(out) > 2000 {
			out = "..." + out[len(out)-2000:]
		}
		if err == nil && strings.Contains(out, "Nothing new added") {
			return false, out, nil
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && strings.TrimSpace(serr) == "" {
		for _, u := range unchanged {
			if strings.Contains(out, u) {
				return false, out, nil
			}
		}
	}
	if err != nil {
		return false, out, fmt.Errorf("%w: %s: %v: %s", ErrCommand, s.Short(e.Sacctmgr), err, oneLine(serr+out))
	}
	// sacctmgr exits 0 on some refusals ("Changes Discarded") too.
	if strings.Contains(out, "Changes Discarded") || strings.Contains(serr, "Changes Discarded") {
		return false, out, fmt.Errorf("%w: %s: %s", ErrCommand, s.Short(e.Sacctmgr), oneLine(serr+out))
	}
	return true, out, nil
}

// ReadState reads everything MakePlan needs: four sacctmgr queries and
// one squeue, run at the same time (readers do not contend in slurmdbd the
// way writers do; each costs ~0.35 s of round trips, so one pass reads in
// the time of one query instead of four).
func (e *Exec) ReadState(ctx context.Context, cluster string) (*State, error) {
	outs, err := e.readAll(ctx, accountQuery(), assocQuery(), defaultsQuery(strings.ToLower(cluster)), qosQuery(), nil)
	if err != nil {
		return nil, err
	}
	st, err := ParseState(cluster, outs[0], outs[1], outs[2], outs[3], outs[4])
	if err != nil {
		return nil, fmt.Errorf("slurm: reading state of cluster %s: %w", cluster, err)
	}
	return st, nil
}

// ReadUsers reads back only users' associations and defaults (and the
// jobs) after a pass whose commands touched nothing else, and returns prev
// with those users replaced: one user moved reads two rows instead of the
// whole accounting (1.4 s and 0.5 s of slurmdbd CPU at 10,000
// associations). Accounts and QOS are prev's: the caller reads everything
// again when a command changed them.
func (e *Exec) ReadUsers(ctx context.Context, cluster string, prev *State, users []string) (*State, error) {
	cl := strings.ToLower(cluster)
	who := "users=" + strings.Join(users, ",")
	q := assocQuery()
	q = append(q[:2:2], "where", "cluster="+cl, who, q[2])
	outs, err := e.readAll(ctx, q, []string{"show", "assoc", "where", "cluster=" + cl, who, "onlydefaults", "format=user,account"}, nil)
	if err != nil {
		return nil, err
	}
	part, err := ParseState(cluster, "", outs[0], outs[1], "", outs[2])
	if err != nil {
		return nil, fmt.Errorf("slurm: reading back users of cluster %s: %w", cluster, err)
	}
	next := *prev
	next.Users = make(map[string]*UserState, len(prev.Users))
	for name, u := range prev.Users {
		next.Users[name] = u
	}
	for _, name := range users {
		delete(next.Users, strings.ToLower(name))
	}
	for name, u := range part.Users {
		if len(u.Assocs) > 0 {
			next.Users[name] = u
		}
	}
	next.Jobs, next.UnnamedJobs, next.JobList = part.Jobs, part.UnnamedJobs, part.JobList
	return &next, nil
}

// readAll runs the sacctmgr queries (nil: squeue) at the same time.
func (e *Exec) readAll(ctx context.Context, queries ...[]string) ([]string, error) {
	outs := make([]string, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Add(1)
		go func(i int, q []string) {
			defer wg.Done()
			if q == nil {
				outs[i], errs[i] = e.Jobs(ctx)
				return
			}
			outs[i], errs[i] = e.Read(ctx, q...)
		}(i, q)
	}
	wg.Wait()
	return outs, errors.Join(errs...)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
