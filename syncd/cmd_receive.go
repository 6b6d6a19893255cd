package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/ssh"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/receiver"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// The push receiver's commands. The receiver itself lives in
// syncd/receiver; this file only wires it to the config, the store and
// the commit pipeline (pipeline.Syncer.Once).

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

// openReceiverStore loads the config and opens the receiver's store with
// the allocation rules the config sets.
func openReceiverStore(cfgPath string) (*config.Config, *config.Receiver, *receiver.Store, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, nil, nil, err
	}
	if !cfg.HasReceiver() {
		return nil, nil, nil, fmt.Errorf("%s has no [receiver] table: these commands work on the receiver's store", cfgPath)
	}
	rc, err := cfg.DecodeReceiver()
	if err != nil {
		return nil, nil, nil, err
	}
	local, err := validate.ReadLocal(cfg.LocalPasswd, cfg.LocalGroup)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := receiver.Open(rc.StorePath, receiver.Options{
		UIDMin: cfg.UIDMin, UIDMax: min(cfg.UIDMax, config.MaxID), GIDMin: cfg.GIDMin, GIDMax: min(cfg.GIDMax, config.MaxID),
		PrimaryGID: rc.PrimaryGID, UserNameFrom: rc.UserNameFrom, UserNameDomains: cfg.UserNameDomains, UserNames: cfg.UserNames.Users(),
		SSHKeysAttribute: rc.SSHKeysAttribute, QuotaAttribute: rc.HomeQuotaAttribute, ProjectQuotaAttribute: rc.ProjectQuotaAttribute, ReservedUIDs: local.UIDs, ReservedGIDs: local.GIDs,
		GroupNames: cfg.GroupNames.Policy(), MaxNewIDsPerHour: rc.MaxNewIDsPerHour,
		ReservedNames: cfg.ReservedNames, LocalNames: localNames(local),
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if rc.PrimaryGID == 0 {
		// Each allocated user has a private group: publish it by name.
		cfg.PrivateGroups = config.PrivateGroupsAll
	} else if !slices.Contains(cfg.SharedPrimaryGIDs, rc.PrimaryGID) {
		// The admin chose it as every user's primary group: validation
		// accepts it like a shared_primary_gids entry (never below min_id).
		cfg.SharedPrimaryGIDs = append(cfg.SharedPrimaryGIDs, rc.PrimaryGID)
	}
	return cfg, rc, st, nil
}

// writeNewToken prints a new client's token and the [[receiver.clients]]
// block to paste, scope included: the scope decides what the client may
// see and change, so it is written out rather than left to its default.
// inUse are the clients the config already has (nil: none or unreadable).
func writeNewToken(w io.Writer, name, scope, token string, inUse []config.ReceiverClient) {
	fmt.Fprintf(w, "token for %s (give it to the identity provider; it is not stored anywhere):\n%s\n\n", name, token)
	why := "a new identity provider: its own scope. For a token rotation use the old entry's scope (--scope)"
	if scope == "" {
		scope = name
	} else {
		why = "the scope given with --scope"
	}
	var scopes []string
	for _, c := range inUse {
		if c.Scope == scope {
			why = fmt.Sprintf("shared with client %q: both see and change the same users and groups", c.Name)
		}
		if !slices.Contains(scopes, c.Scope) {
			scopes = append(scopes, c.Scope)
		}
	}
	fmt.Fprintf(w, "[[receiver.clients]]\nname = %q\ntoken_sha256 = %q\nscope = %q  # %s\n", name, receiver.HashToken(token), scope, why)
	if len(scopes) > 0 {
		fmt.Fprintf(w, "# scopes in this config: %s\n", strings.Join(scopes, ", "))
	}
}

// localNames are the node's account and group names.
func localNames(l *validate.Local) map[string]bool {
	m := make(map[string]bool, len(l.UserNames)+len(l.GroupNames))
	for n := range l.UserNames {
		m[n] = true
	}
	for n := range l.GroupNames {
		m[n] = true
	}
	return m
}

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
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		tok := base64.RawURLEncoding.EncodeToString(b[:])
		var inUse []config.ReceiverClient
		if cfg, err := config.Load(cfgPath); err == nil && cfg.HasReceiver() {
			if rc, err := cfg.DecodeReceiver(); err == nil {
				inUse = rc.Clients
			}
		}
		writeNewToken(os.Stdout, *newToken, *scope, tok, inUse)
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
// the usual pipeline, debounced: a change waits until the store has been
// quiet for receiver.debounce (at most receiver.max_delay after the first
// change), so a burst of writes becomes one snapshot.
func serveReceiver(ctx context.Context, cfg *config.Config, rc *config.Receiver, st *receiver.Store, addrFile string) error {
	log := newLogger(cfg, os.Stderr)
	if rc.TLSKey != "" {
		if err := config.CheckSecretFile(rc.TLSKey); err != nil {
			return fmt.Errorf("receiver.tls_key: %w", err)
		}
	}
	clients := receiverClients(rc)
	m := metrics.New()
	h, err := receiver.NewHandler(st, receiver.ServerOptions{Clients: clients, RateLimit: rc.RateLimit,
		RateBurst: rc.RateBurst, MaxBody: rc.MaxBody, SharedScope: rc.SharedScope, Log: log, Registerer: m.Registry})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", rc.Listen)
	if err != nil {
		return fmt.Errorf("receiver.listen: %w", err)
	}
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(l.Addr().String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	if cfg.MetricsListen != "" {
		go func() {
			if err := m.Serve(ctx, cfg.MetricsListen); err != nil {
				log.WithError(err).Error("syncd: metrics server stopped")
			}
		}()
	}
	log.WithFields(logrus.Fields{"version": version, "listen": l.Addr().String(), "tls": rc.TLSCert != "",
		"store": st.Path(), "cache": cfg.CachePath, "clients": len(clients)}).Info("syncd: receiver started")
	if hint := scopeHint(rc); hint != "" {
		log.Warn(hint)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	// The SCIM root is /scim/v2 (the library also answers without /v2).
	mux := http.NewServeMux()
	mux.Handle("/scim/", http.StripPrefix("/scim", h))
	go func() { errc <- receiver.Serve(sctx, l, mux, rc.TLSCert, rc.TLSKey) }()

	src := receiverSource(st)
	s := pipeline.NewSyncer(cfg, src, log, m)
	// As the poll daemon does (pipeline/daemon.go): the live snapshot's
	// contents are kept between bursts, so a burst is not a load of the
	// whole snapshot from disk, and the explain record is written while
	// the publisher works (awaited before the next burst and on exit).
	var live pipeline.LiveKeep
	var records pipeline.Background
	defer records.Wait()
	commitNow := func(gen int64) int64 {
		if gen == 0 {
			// A store nothing was ever pushed to: there is nothing to
			// publish yet (the policy would refuse an empty directory).
			return gen
		}
		records.Wait()
		// The memory limit follows what is held between bursts (the
		// store's directory, the live contents), as after a poll.
		defer pipeline.FitMemoryLimit()
		// The rows changed since the last burst, applied to the
		// directory held (syncd/receiver/update.go), go through the
		// same pipeline as a full read.
		o := pipeline.Opts{Contact: time.Now(), Live: &live, Records: &records}
		dir, _, err := src.Update(ctx)
		if err != nil {
			log.WithError(err).Warn("syncd: receiver: reading the changed rows failed; reading the whole store")
		} else {
			o.Dir = dir
		}
		out, err := s.Once(ctx, o)
		if err != nil && ctx.Err() == nil {
			log.WithError(err).Error("syncd: receiver: snapshot not committed")
		}
		if out != nil && out.Result == commit.Committed {
			log.WithField("generation", gen).Info("syncd: receiver: snapshot committed")
		}
		publishAfterPoll(ctx, cfg, log, m) // [publish]: nodes follow a push head too (cmd_cluster.go)
		result := "failed"
		if out != nil && out.Result != "" {
			result = out.Result
		}
		// Everything the store held at generation gen is now in the live
		// snapshot (and published), unless result says otherwise.
		log.WithFields(logrus.Fields{"generation": gen, "result": result}).Info("syncd: receiver: store generation processed")
		return gen
	}
	startHead(ctx, cfg, log)
	committed := commitNow(mustGen(ctx, st))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var first, last time.Time
	seen := committed
	lastRun := time.Now()
	var lastPrune time.Time
	changed := false
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-errc
			log.Info("syncd: receiver stopping")
			return nil
		case err := <-errc:
			return fmt.Errorf("receiver: %w", err)
		case <-st.Changed():
			changed = true
		case <-tick.C:
		case <-hup:
			// Token rotation without a restart: the clients are re-read;
			// everything else needs one.
			c2, err := config.Load(cfg.Path)
			var rc2 *config.Receiver
			if err == nil {
				rc2, err = c2.DecodeReceiver()
			}
			if err != nil {
				log.WithError(err).Error("syncd: SIGHUP: new configuration rejected; keeping the old clients")
				continue
			}
			h.SetClients(receiverClients(rc2))
			h.SetSharedScope(rc2.SharedScope)
			log.WithFields(logrus.Fields{"clients": len(rc2.Clients), "shared_scope": rc2.SharedScope}).Info("syncd: SIGHUP: receiver clients and shared_scope reloaded (other changes take effect on restart)")
			if hint := scopeHint(rc2); hint != "" {
				log.Warn(hint)
			}
			continue
		}
		// A write of ours signalled it: its generation, without a query
		// (one per commit was 3% of the receiver's CPU under a load);
		// the tick reads the store's, which sees other processes' writes.
		gen := st.Committed()
		if !changed {
			var err error
			if gen, err = st.Generation(ctx); err != nil {
				continue
			}
		}
		changed = false
		t := time.Now()
		if gen != seen {
			if first.IsZero() {
				first = t
			}
			seen, last = gen, t
		}
		due := !first.IsZero() && (t.Sub(last) >= rc.Debounce.Duration || t.Sub(first) >= rc.MaxDelay.Duration)
		if t.Sub(lastPrune) >= time.Hour {
			lastPrune = t
			if n, err := st.PruneAudit(ctx, t.AddDate(0, 0, -rc.AuditDays)); err != nil {
				log.WithError(err).Error("syncd: receiver: pruning the audit log failed")
			} else if n > 0 {
				log.WithField("rows", n).Info("syncd: receiver: audit rows older than receiver.audit_days removed")
			}
		}
		if due || t.Sub(lastRun) >= cfg.PollInterval {
			committed = commitNow(gen)
			first, lastRun = time.Time{}, time.Now()
		}
	}
}

// checkReceiverOnline is check-config --online for a receiver: nothing is
// polled, so it opens the store and loads the TLS pair instead.
func checkReceiverOnline(ctx context.Context, cfgPath string) error {
	_, rc, st, err := openReceiverStore(cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	dir, err := receiverSource(st).Fetch(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("receiver store %s: %d users, %d groups\n", st.Path(), len(dir.Users), len(dir.Groups))
	if rc.TLSCert != "" {
		if err := config.CheckSecretFile(rc.TLSKey); err != nil {
			return fmt.Errorf("receiver.tls_key: %w", err)
		}
		if _, err := tls.LoadX509KeyPair(rc.TLSCert, rc.TLSKey); err != nil {
			return fmt.Errorf("receiver.tls_cert/tls_key: %w", err)
		}
		fmt.Printf("receiver TLS: %s loads\n", rc.TLSCert)
	} else {
		fmt.Printf("receiver: plain HTTP on %s: put a TLS reverse proxy in front\n", rc.Listen)
	}
	return nil
}

// scopeHint is the upgrade note when clients have different scopes: each
// sees only what it created, so two entries of one IdP's token rotation
// (before scopes, two names) need one scope.
func scopeHint(rc *config.Receiver) string {
	scopes := map[string]bool{}
	var list []string
	for _, c := range rc.Clients {
		if !scopes[c.Scope] {
			scopes[c.Scope] = true
			list = append(list, c.Scope)
		}
	}
	if rc.SharedScope || len(list) < 2 {
		return ""
	}
	return fmt.Sprintf("syncd: receiver clients have %d scopes (%s): each sees and changes only the users and groups its scope created; give the entries of one identity provider's token rotation the same scope = \"...\" in [[receiver.clients]], or set receiver.shared_scope = true to share as before",
		len(list), strings.Join(list, ", "))
}

func receiverClients(rc *config.Receiver) []receiver.Client {
	var clients []receiver.Client
	for _, c := range rc.Clients {
		var h [32]byte
		b, _ := hex.DecodeString(c.TokenSHA256)
		copy(h[:], b)
		clients = append(clients, receiver.Client{Name: c.Name, SHA256: h, Scope: c.Scope})
	}
	return clients
}

// receiverSource is the store as the pipeline's source.
func receiverSource(st *receiver.Store) *receiver.Source {
	return receiver.NewSource(st, "scim-receiver "+st.Path())
}

func mustGen(ctx context.Context, st *receiver.Store) int64 {
	g, _ := st.Generation(ctx)
	return g
}

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
