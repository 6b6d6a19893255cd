package main

// Head and nodes: the head publishes ([publish], syncd/publish), nodes
// mirror ([mirror], syncd/mirror). This file only wires commands.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/homes"
	"github.com/scimbridge/scimbridge/syncd/mirror"
	"github.com/scimbridge/scimbridge/syncd/publish"
	"github.com/scimbridge/scimbridge/syncd/schedule"
)

func init() {
	commands["keygen"] = command{
		Summary: "keygen --out FILE: an ed25519 key pair for [publish] (FILE, root-only) and nodes (FILE.pub)",
		Run:     runKeygen,
	}
	commands["publish"] = command{
		Summary: "publish --once: publish the live snapshot into [publish] dir now (the daemon does it after every poll)",
		Run:     runPublish,
	}
	commands["mirror"] = command{
		Summary: "mirror --once: one poll of the head on a node ([mirror]); exit 3 if refused",
		Run:     runMirrorOnce,
	}
	commands["serve"] = command{
		Summary: "serve [--dir D] [--listen ADDR]: serve the publish directory over HTTP (ETag, bounded concurrency)",
		Run:     runServe,
	}
}

func runKeygen(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("keygen", &cfgPath)
	out := fs.String("out", "", "private key file to create (the public key goes to FILE.pub)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError{"--out FILE is required"}
	}
	pubPath, id, err := publish.WriteKeyPair(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "private key %s (keep it on the head, root-only)\npublic key  %s (copy to every node: [mirror] public_key_file)\nkey id      %s\n",
		*out, pubPath, id)
	return nil
}

func runPublish(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("publish", &cfgPath)
	once := fs.Bool("once", false, "publish once and exit (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*once {
		return usageError{"--once is required (syncd run publishes after every poll)"}
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	if !cfg.HasPublish() {
		return fmt.Errorf("%s has no [publish] table", cfgPath)
	}
	pb, err := publish.ForConfig(cfg)
	if err != nil {
		return err
	}
	res, err := pb.Publish(ctx, cfg.CachePath, publish.SourceContact(cfg))
	if err != nil {
		return err
	}
	m := res.Manifest
	fmt.Fprintf(os.Stdout, "serial %d: %s (%d bytes, %s), source_contact %s\n", m.Serial, m.Object, m.ObjectSize,
		m.Compression, m.SourceContact.Format(time.RFC3339))
	return nil
}

func runServe(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("serve", &cfgPath)
	dir := fs.String("dir", "", "publish directory (default: [publish] dir)")
	listen := fs.String("listen", "", "address (default: [publish] listen, else "+publish.DefaultListen+")")
	maxConn := fs.Int("max-connections", 0, "requests served at once (default: [publish] max_connections, else 64)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cert, key := "", ""
	if *dir == "" || *listen == "" || *maxConn == 0 {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return err
		}
		if !cfg.HasPublish() {
			return fmt.Errorf("%s has no [publish] table; give --dir", cfgPath)
		}
		if *dir == "" {
			*dir = cfg.Publish.Dir
		}
		if *listen == "" {
			*listen = cfg.Publish.Listen
		}
		if *maxConn == 0 {
			*maxConn = cfg.Publish.MaxConnections
		}
		cert, key = cfg.Publish.TLSCertFile, cfg.Publish.TLSKeyFile
	}
	if *listen == "" {
		*listen = publish.DefaultListen
	}
	if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("publish directory %s: not a directory (%v)", *dir, err)
	}
	s := &publish.Server{Dir: *dir, MaxConnections: *maxConn}
	return s.ListenAndServe(ctx, *listen, cert, key, func(a net.Addr) {
		// The first line on stdout is the URL, for scripts and tests.
		scheme := "http"
		if cert != "" {
			scheme = "https"
		}
		fmt.Fprintf(os.Stdout, "%s://%s/\n", scheme, a.String())
	})
}

func runMirrorOnce(ctx context.Context, cfgPath string, args []string) error {
	fs := flags("mirror", &cfgPath)
	once := fs.Bool("once", false, "poll once and exit (required: the loop is 'syncd run')")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*once {
		return usageError{"--once is required (the polling loop is `syncd run`)"}
	}
	cfg, err := mirror.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	n, err := mirror.FromConfig(cfg, version, newLogger(cfg, os.Stderr))
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Mirror.Timeout)
	defer cancel()
	r := n.Poll(pctx)
	if r.Err != nil {
		var ref *mirror.Refusal
		if errors.As(r.Err, &ref) {
			return exitError{3, r.Err}
		}
		return r.Err
	}
	fmt.Fprintf(os.Stdout, "%s: serial %d, %d users, %d groups\n", r.Outcome, r.Meta.Serial, r.Meta.Users, r.Meta.Groups)
	return nil
}

// runMirrorDaemon is `syncd run` on a node (syncd/mirror): it follows the
// head, with a storage node's homes pass beside it (syncd/homes).
func runMirrorDaemon(ctx context.Context, cfgPath string, cfg *config.Config) error {
	d := &mirror.Daemon{CfgPath: cfgPath, Cfg: cfg, Version: version, Log: newLogger(cfg, os.Stderr), Beside: []schedule.Task{homes.Loop}}
	return d.Run(ctx)
}
