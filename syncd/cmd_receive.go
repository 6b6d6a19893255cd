package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"

	"golang.org/x/crypto/ssh"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/receiver"
)

// The push receiver's commands. The receiver itself lives in
// syncd/receiver (the daemon: receiver.Daemon); this file only wires
// the commands to it: flags, the logger, metrics, SIGHUP and the
// publishing head.

func init() {
	commands["receive"] = command{
		Summary: "SCIM 2.0 service provider identity providers push to ([receiver]); --new-token NAME, --audit N",
		Run:     runReceive,
	}
	commands["users"] = command{
		Summary: "users add|disable|enable|remove NAME: local users in the receiver store",
		Run:     runUsers,
	}
	commands["groups"] = command{
		Summary: "groups add-member|remove-member GROUP USER: local memberships in the receiver store",
		Run:     runGroups,
	}
	commands["keys"] = command{
		Summary: "keys set USER < key.pub: SSH keys for a user in the receiver store (empty input removes them)",
		Run:     runKeys,
	}
}

// openReceiverStore loads the config and opens the receiver's store
// (syncd/receiver).
var openReceiverStore = receiver.OpenConfigured

func runReceive(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("receive", &cfgPath)
	newToken := fs.String("new-token", "", "print a new bearer token for client NAME and the lines to add to [receiver]; then exit")
	scope := fs.String("scope", "", "with --new-token: the client's scope (default NAME; for a token rotation, the scope of the entry the new token replaces)")
	audit := fs.Int("audit", 0, "print the last N audit log entries; then exit")
	addrFile := fs.String("addr-file", "", "write the address listened on to this file (tests: listen on port 0)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *scope != "" && *newToken == "" {
		return usageError{"--scope goes with --new-token NAME"}
	}
	if *newToken != "" {
		tok, err := receiver.NewToken()
		if err != nil {
			return err
		}
		var inUse []config.ReceiverClient
		if cfg, err := config.Load(cfgPath); err == nil && cfg.HasReceiver() {
			if rc, err := cfg.DecodeReceiver(); err == nil {
				inUse = rc.Clients
			}
		}
		receiver.WriteNewToken(os.Stdout, *newToken, *scope, tok, inUse)
		return nil
	}
	cfg, rc, st, err := openReceiverStore(cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	if *audit > 0 {
		rows, err := st.Audit(ctx, *audit)
		if err != nil {
			return err
		}
		for _, a := range rows {
			fmt.Printf("%s %-12s %-21s %-6s %3d %s %s %s\n", a.At, a.Client, a.Remote, a.Method, a.Status, a.Path, a.Target, a.Detail)
		}
		return nil
	}
	return serveReceiver(ctx, cfg, rc, st, *addrFile)
}

// serveReceiver serves SCIM and commits the store's directory through
// the pipeline (receiver.Daemon), publishing with [publish].
func serveReceiver(ctx context.Context, cfg *config.Config, rc *config.Receiver, st *receiver.Store, addrFile string) error {
	d := &receiver.Daemon{Cfg: cfg, RC: rc, Store: st, Log: newLogger(cfg, os.Stderr), Metrics: metrics.New(),
		Version: version, AddrFile: addrFile, StartHead: startHead, AfterCommit: publishAfterPoll}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return d.Run(ctx, hup)
}

// checkReceiverOnline is check-config --online for a receiver.
func checkReceiverOnline(ctx context.Context, cfgPath string) error {
	return receiver.CheckOnline(ctx, cfgPath, os.Stdout)
}

// receiverSource is the store as the pipeline's source.
var receiverSource = receiver.StoreSource

// localClient names who made a local change in the audit log.
func localClient() string {
	who := os.Getenv("SUDO_USER")
	if who == "" {
		if u, err := user.Current(); err == nil {
			who = u.Username
		}
	}
	return "local:" + who
}

func runUsers(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("users", &cfgPath)
	name := fs.String("name", "", "full name (GECOS) for add")
	email := fs.String("email", "", "email for add")
	shell := fs.String("shell", "", "login shell for add")
	if len(args) < 2 {
		return usageError{"usage: syncd users add|disable|enable|remove NAME [--name FULL] [--email E] [--shell S]"}
	}
	verb, who := args[0], args[1]
	if err := parseFlags(fs, args[2:]); err != nil {
		return err
	}
	_, _, st, err := openReceiverStore(cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	c := localClient()
	switch verb {
	case "add":
		uid, err := st.AddUser(ctx, c, receiver.LocalUser{Name: who, DisplayName: *name, Email: *email, Shell: *shell})
		if err != nil {
			return err
		}
		fmt.Printf("added %s uid %d\n", who, uid)
	case "disable", "enable":
		if err := st.SetActive(ctx, c, who, verb == "enable"); err != nil {
			return err
		}
		fmt.Printf("%sd %s\n", verb, who)
	case "remove":
		if err := st.RemoveUser(ctx, c, who); err != nil {
			return err
		}
		fmt.Printf("removed %s (its uid stays reserved for the name)\n", who)
	default:
		return usageError{fmt.Sprintf("unknown users command %q (add, disable, enable, remove)", verb)}
	}
	return nil
}

func runGroups(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("groups", &cfgPath)
	if len(args) < 3 {
		return usageError{"usage: syncd groups add-member|remove-member GROUP USER"}
	}
	verb, grp, who := args[0], args[1], args[2]
	if err := parseFlags(fs, args[3:]); err != nil {
		return err
	}
	_, _, st, err := openReceiverStore(cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	switch verb {
	case "add-member":
		err = st.AddMember(ctx, localClient(), grp, who)
	case "remove-member":
		err = st.RemoveMember(ctx, localClient(), grp, who)
	default:
		return usageError{fmt.Sprintf("unknown groups command %q (add-member, remove-member)", verb)}
	}
	if err == nil {
		fmt.Printf("%s: %s %s\n", verb, grp, who)
	}
	return err
}

func runKeys(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("keys", &cfgPath)
	if len(args) < 2 || args[0] != "set" {
		return usageError{"usage: syncd keys set USER < key.pub"}
	}
	who := args[1]
	if err := parseFlags(fs, args[2:]); err != nil {
		return err
	}
	var keys []string
	sc := bufio.NewScanner(io.LimitReader(os.Stdin, 1<<20))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		// The snapshot's validation checks keys again; refusing here
		// tells the admin now rather than in the log.
		if _, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(l)); err != nil {
			return fmt.Errorf("key %q...: not an OpenSSH public key: %v", l[:min(len(l), 40)], err)
		} else if len(opts) > 0 {
			return fmt.Errorf("key %q...: options (%s) are not accepted", l[:min(len(l), 40)], strings.Join(opts, ","))
		}
		keys = append(keys, l)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	_, _, st, err := openReceiverStore(cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.SetKeys(ctx, localClient(), who, keys); err != nil {
		return err
	}
	fmt.Printf("%s: %d key(s) set\n", who, len(keys))
	return nil
}
