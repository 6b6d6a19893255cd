// Command scim-testserver serves an in-memory SCIM 2.0 directory for tests
// and the demo. It prints its base URL as the first line on stdout, listens
// on loopback only, and exits on SIGTERM or SIGINT.
//
//	scim-testserver -fixture tests/scimserver/testdata/sample.json -print-addr
//	scim-testserver -generate 2000,200 -cursor -flavor coreweave -token-file tok
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scimbridge/scimbridge/tests/scimserver"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	fixture := flag.String("fixture", "", "directory fixture (JSON) to serve")
	generate := flag.String("generate", "", "serve a generated directory of `USERS,GROUPS`")
	seed := flag.Int64("seed", 1, "seed for -generate")
	flavor := flag.String("flavor", "posix", "extension flavour: posix, posix-singular-key or coreweave")
	tokenFile := flag.String("token-file", "", "require the bearer token in this file")
	basicUser := flag.String("basic-user", "", "accept HTTP basic auth with this user (password from -basic-password-file)")
	basicPassFile := flag.String("basic-password-file", "", "file holding the HTTP basic password")
	cursor := flag.Bool("cursor", false, "support RFC 9865 cursor paging")
	cursorDefault := flag.Bool("cursor-default", false, "make cursor the default pagination method (implies -cursor)")
	pageMax := flag.Int("page-max", 0, "maxPageSize (default 1000)")
	pageDefault := flag.Int("page-default", 0, "defaultPageSize (default 100)")
	returnedRequest := flag.Bool("returned-request", false, "mark the POSIX extension returned:request (absent unless named)")
	userGroups := flag.Bool("user-groups", false, "render the users' read-only groups attribute (RFC 7643 section 4.1.2)")
	basePath := flag.String("base-path", "/scim/v2", "path prefix of the SCIM endpoints")
	printAddr := flag.Bool("print-addr", false, "print the base URL on stdout (always done; kept for scripts that pass it)")
	faultsJSON := flag.String("faults-json", "", "faults to start with, as JSON (see scimserver.Faults)")
	tlsCert := flag.String("tls-cert", "", "serve HTTPS with this certificate (PEM)")
	tlsKey := flag.String("tls-key", "", "key for -tls-cert (PEM)")
	verbose := flag.Bool("v", false, "log every request on stderr")
	flag.Parse()
	_ = printAddr
	log.SetFlags(0)
	log.SetPrefix("scim-testserver: ")

	opts := scimserver.Options{
		BasePath:        *basePath,
		Cursor:          *cursor || *cursorDefault,
		CursorDefault:   *cursorDefault,
		MaxPageSize:     *pageMax,
		DefaultPageSize: *pageDefault,
		ReturnedRequest: *returnedRequest,
		UserGroups:      *userGroups,
	}
	f, ok := scimserver.FlavorByName(*flavor)
	if !ok {
		log.Fatalf("-flavor %q: want posix, posix-singular-key or coreweave", *flavor)
	}
	opts.Flavor = f
	if *tokenFile != "" {
		opts.Token = readSecret(*tokenFile)
	}
	if *basicUser != "" {
		opts.BasicUser = *basicUser
		if *basicPassFile == "" {
			log.Fatalf("-basic-user needs -basic-password-file")
		}
		opts.BasicPassword = readSecret(*basicPassFile)
	}
	if *faultsJSON != "" {
		dec := json.NewDecoder(strings.NewReader(*faultsJSON))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts.Faults); err != nil {
			log.Fatalf("-faults-json: %v", err)
		}
	}
	if *verbose {
		opts.Logf = log.Printf
	}
	srv := scimserver.New(opts)

	switch {
	case *fixture != "" && *generate != "":
		log.Fatalf("-fixture and -generate are exclusive")
	case *fixture != "":
		if err := srv.LoadFixture(*fixture); err != nil {
			log.Fatal(err)
		}
	case *generate != "":
		u, g, err := parsePair(*generate)
		if err != nil {
			log.Fatalf("-generate %q: %v", *generate, err)
		}
		if err := srv.Load(scimserver.Generate(u, g, *seed)); err != nil {
			log.Fatalf("-generate %q: %v", *generate, err)
		}
	}

	if err := checkLoopback(*listen); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen on %s: %v", *listen, err)
	}
	hs := &http.Server{}
	if *tlsCert != "" || *tlsKey != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			log.Fatalf("load -tls-cert %s / -tls-key %s: %v", *tlsCert, *tlsKey, err)
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	// Catch SIGTERM before the URL is printed: a script (or TestBinary) may
	// stop the server as soon as it has the URL, and a signal that arrives
	// before NotifyContext killed it with the default action (exit by signal).
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	url, stop := srv.Serve(ln, hs)
	fmt.Println(url)
	os.Stdout.Sync()
	d := srv.Snapshot()
	log.Printf("serving %d users, %d groups at %s (flavor %s)", len(d.Users), len(d.Groups), url, f.Name)

	<-ctx.Done()
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

func readSecret(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		log.Fatalf("%s is empty", path)
	}
	return s
}

func parsePair(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, fmt.Errorf("want USERS,GROUPS")
	}
	u, err1 := strconv.Atoi(strings.TrimSpace(a))
	g, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || u < 0 || g < 0 {
		return 0, 0, fmt.Errorf("want two non-negative integers")
	}
	return u, g, nil
}

// checkLoopback refuses addresses other hosts could reach: the server has
// no real authentication story and an admin API.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: refusing a non-loopback address (use 127.0.0.1 or [::1])", addr)
	}
	return nil
}
