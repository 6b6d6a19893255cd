package receiver

import (
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
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/metrics"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// OpenConfigured loads the config at cfgPath and opens the receiver's
// store with the allocation rules the config sets. The config returned
// is adjusted for a receiver head: private groups are published by name
// (primary_gid 0) or the receiver's primary_gid is a shared primary gid.
func OpenConfigured(cfgPath string) (*config.Config, *config.Receiver, *Store, error) {
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
	st, err := Open(rc.StorePath, Options{
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

// NewToken is a new client's bearer token: 32 random bytes, base64url.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// WriteNewToken prints a new client's token and the [[receiver.clients]]
// block to paste, scope included: the scope decides what the client may
// see and change, so it is written out rather than left to its default.
// inUse are the clients the config already has (nil: none or unreadable).
func WriteNewToken(w io.Writer, name, scope, token string, inUse []config.ReceiverClient) {
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
	fmt.Fprintf(w, "[[receiver.clients]]\nname = %q\ntoken_sha256 = %q\nscope = %q  # %s\n", name, HashToken(token), scope, why)
	if len(scopes) > 0 {
		fmt.Fprintf(w, "# scopes in this config: %s\n", strings.Join(scopes, ", "))
	}
}

// ScopeHint is the upgrade note when clients have different scopes: each
// sees only what it created, so two entries of one IdP's token rotation
// (before scopes, two names) need one scope. "" when there is nothing to
// say.
func ScopeHint(rc *config.Receiver) string {
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

// ConfiguredClients are the [[receiver.clients]] entries as the gate
// takes them.
func ConfiguredClients(rc *config.Receiver) []Client {
	var clients []Client
	for _, c := range rc.Clients {
		var h [32]byte
		b, _ := hex.DecodeString(c.TokenSHA256)
		copy(h[:], b)
		clients = append(clients, Client{Name: c.Name, SHA256: h, Scope: c.Scope})
	}
	return clients
}

// StoreSource is the store as the pipeline's source, named after its file.
func StoreSource(st *Store) *Source {
	return NewSource(st, "scim-receiver "+st.Path())
}

// CheckOnline is check-config --online for a receiver: nothing is
// polled, so it opens the store and loads the TLS pair instead, and
// prints what it found to w.
func CheckOnline(ctx context.Context, cfgPath string, w io.Writer) error {
	_, rc, st, err := OpenConfigured(cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	dir, err := StoreSource(st).Fetch(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "receiver store %s: %d users, %d groups\n", st.Path(), len(dir.Users), len(dir.Groups))
	if rc.TLSCert != "" {
		if err := config.CheckSecretFile(rc.TLSKey); err != nil {
			return fmt.Errorf("receiver.tls_key: %w", err)
		}
		if _, err := tls.LoadX509KeyPair(rc.TLSCert, rc.TLSKey); err != nil {
			return fmt.Errorf("receiver.tls_cert/tls_key: %w", err)
		}
		fmt.Fprintf(w, "receiver TLS: %s loads\n", rc.TLSCert)
	} else {
		fmt.Fprintf(w, "receiver: plain HTTP on %s: put a TLS reverse proxy in front\n", rc.Listen)
	}
	return nil
}

// Daemon is `syncd receive` (and `syncd run` on a head with
// [receiver]): it serves SCIM and commits the store's directory through
// the pipeline (pipeline.Syncer.Once), debounced: a change waits until
// the store has been quiet for receiver.debounce (at most
// receiver.max_delay after the first change), so a burst of writes
// becomes one snapshot.
type Daemon struct {
	Cfg     *config.Config
	RC      *config.Receiver
	Store   *Store
	Log     *logrus.Logger
	Metrics *metrics.Metrics
	// Version is logged when the receiver starts.
	Version string
	// AddrFile, when set, gets the address listened on (tests: port 0).
	AddrFile string
	// StartHead starts the publishing head's own work ([publish]) once
	// the listener is up; AfterCommit runs after every burst (a head with
	// [publish] publishes: nodes follow a push head too). Either may be
	// nil.
	StartHead   func(ctx context.Context, cfg *config.Config, log logrus.FieldLogger)
	AfterCommit func(ctx context.Context, cfg *config.Config, log logrus.FieldLogger, m *metrics.Metrics)
}

// Run serves until ctx ends; a value on hup re-reads the clients and
// shared_scope (token rotation without a restart).
func (d *Daemon) Run(ctx context.Context, hup <-chan os.Signal) error {
	cfg, rc, st, log, m := d.Cfg, d.RC, d.Store, d.Log, d.Metrics
	if rc.TLSKey != "" {
		if err := config.CheckSecretFile(rc.TLSKey); err != nil {
			return fmt.Errorf("receiver.tls_key: %w", err)
		}
	}
	clients := ConfiguredClients(rc)
	h, err := NewHandler(st, ServerOptions{Clients: clients, RateLimit: rc.RateLimit,
		RateBurst: rc.RateBurst, MaxBody: rc.MaxBody, SharedScope: rc.SharedScope, Log: log, Registerer: m.Registry})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", rc.Listen)
	if err != nil {
		return fmt.Errorf("receiver.listen: %w", err)
	}
	if d.AddrFile != "" {
		if err := os.WriteFile(d.AddrFile, []byte(l.Addr().String()+"\n"), 0o644); err != nil {
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
	log.WithFields(logrus.Fields{"version": d.Version, "listen": l.Addr().String(), "tls": rc.TLSCert != "",
		"store": st.Path(), "cache": cfg.CachePath, "clients": len(clients)}).Info("syncd: receiver started")
	if hint := ScopeHint(rc); hint != "" {
		log.Warn(hint)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	// The SCIM root is /scim/v2 (the library also answers without /v2).
	mux := http.NewServeMux()
	mux.Handle("/scim/", http.StripPrefix("/scim", h))
	go func() { errc <- Serve(sctx, l, mux, rc.TLSCert, rc.TLSKey) }()

	b := &burst{d: d, src: StoreSource(st)}
	b.s = pipeline.NewSyncer(cfg, b.src, log, m)
	defer b.records.Wait()
	if d.StartHead != nil {
		d.StartHead(ctx, cfg, log)
	}
	g0, _ := st.Generation(ctx)
	committed := b.commit(ctx, g0)
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
			log.WithFields(logrus.Fields{"commits": st.commits.Load(), "writes": st.batched.Load()}).Info("syncd: receiver stopping")
			return nil
		case err := <-errc:
			return fmt.Errorf("receiver: %w", err)
		case <-st.Changed():
			changed = true
		case <-tick.C:
		case <-hup:
			d.reload(h)
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
			b.commit(ctx, gen)
			first, lastRun = time.Time{}, time.Now()
		}
	}
}

// reload re-reads the clients and shared_scope from the config file
// (SIGHUP); everything else needs a restart.
func (d *Daemon) reload(h *Gate) {
	log := d.Log
	c2, err := config.Load(d.Cfg.Path)
	var rc2 *config.Receiver
	if err == nil {
		rc2, err = c2.DecodeReceiver()
	}
	if err != nil {
		log.WithError(err).Error("syncd: SIGHUP: new configuration rejected; keeping the old clients")
		return
	}
	h.SetClients(ConfiguredClients(rc2))
	h.SetSharedScope(rc2.SharedScope)
	log.WithFields(logrus.Fields{"clients": len(rc2.Clients), "shared_scope": rc2.SharedScope}).Info("syncd: SIGHUP: receiver clients and shared_scope reloaded (other changes take effect on restart)")
	if hint := ScopeHint(rc2); hint != "" {
		log.Warn(hint)
	}
}

// burst is what a debounced burst of writes goes through: the rows
// changed since the last burst (Source.Update), the pipeline, then
// AfterCommit. As the poll daemon does (pipeline/daemon.go): the live
// snapshot's contents are kept between bursts, so a burst is not a load
// of the whole snapshot from disk, and the explain record is written
// while the publisher works (awaited before the next burst and on exit).
type burst struct {
	d       *Daemon
	src     *Source
	s       *pipeline.Syncer
	live    pipeline.LiveKeep
	records pipeline.Background
}

// commit makes the store's directory at generation gen the live
// snapshot (and publishes it); it returns gen.
func (b *burst) commit(ctx context.Context, gen int64) int64 {
	d, log := b.d, b.d.Log
	if gen == 0 {
		// A store nothing was ever pushed to: there is nothing to
		// publish yet (the policy would refuse an empty directory).
		return gen
	}
	b.records.Wait()
	t0, cpu0 := time.Now(), pipeline.ProcessCPU()
	// The memory limit follows what is held between bursts (the
	// store's directory, the live contents), as after a poll.
	defer pipeline.FitMemoryLimit()
	// The rows changed since the last burst, applied to the directory
	// held (update.go), go through the same pipeline as a full read.
	o := pipeline.Opts{Contact: time.Now(), Live: &b.live, Records: &b.records}
	dir, _, err := b.src.Update(ctx)
	read := time.Since(t0)
	if err != nil {
		log.WithError(err).Warn("syncd: receiver: reading the changed rows failed; reading the whole store")
	} else {
		o.Dir = dir
	}
	out, err := b.s.Once(ctx, o)
	if err != nil && ctx.Err() == nil {
		log.WithError(err).Error("syncd: receiver: snapshot not committed")
	}
	if out != nil && out.Result == commit.Committed {
		log.WithField("generation", gen).Info("syncd: receiver: snapshot committed")
	}
	if d.AfterCommit != nil {
		d.AfterCommit(ctx, d.Cfg, log, d.Metrics)
	}
	result := "failed"
	if out != nil && out.Result != "" {
		result = out.Result
	}
	// Everything the store held at generation gen is now in the live
	// snapshot (and published), unless result says otherwise. cpu is the
	// process's CPU over the burst (requests served meanwhile included).
	log.WithFields(logrus.Fields{"generation": gen, "result": result, "took": time.Since(t0).Round(time.Millisecond).String(),
		"read": read.Round(time.Millisecond).String(), "cpu": (pipeline.ProcessCPU() - cpu0).Round(time.Millisecond).String()}).Info("syncd: receiver: store generation processed")
	return gen
}
