package keys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

// maxLiveBody bounds the answer for one user.
const maxLiveBody = 1 << 20

// Live reads one user's current keys from the SCIM service syncd reads.
type Live struct {
	base     *url.URL
	endpoint string
	query    url.Values
	auth     func(*http.Request)
	client   *http.Client
	// attrs sends attributes= (syncd's send_attributes; some servers
	// reject it, others omit returned:request attributes without it).
	attrs bool

	userName, active, uid, keys scim.Path
	// keysAlt is read when keys is absent (attributes.ssh_keys_alt).
	keysAlt scim.Path
}

// NewLive builds a Live from syncd's configuration file, loaded with
// syncd's checks: the file and its credential files must be owned by
// root or by the user running this, and readable by nobody else. So a
// refresh needs an AuthorizedKeysCommandUser that owns its copy of the
// configuration and of a (read-only) token; as nobody it fails here and
// the caller uses the snapshot.
func NewLive(configPath string, timeout time.Duration) (*Live, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, err
	}
	if cfg.Attributes.SSHKeys == "" {
		return nil, errors.New("the configuration reads no SSH keys (attributes.ssh_keys)")
	}
	l := &Live{endpoint: cfg.UsersEndpoint, query: url.Values{}, attrs: cfg.SendAttributes}
	if l.base, err = url.Parse(strings.TrimRight(cfg.BaseURL, "/")); err != nil {
		return nil, fmt.Errorf("base_url: %v", err)
	}
	for k, v := range cfg.UsersQuery {
		l.query.Set(k, v)
	}
	for _, p := range []struct {
		dst  *scim.Path
		path string
	}{
		{&l.userName, cfg.Attributes.UserName}, {&l.active, cfg.Attributes.Active},
		{&l.uid, cfg.Attributes.UID}, {&l.keys, cfg.Attributes.SSHKeys},
		{&l.keysAlt, cfg.Attributes.SSHKeysAlt},
	} {
		if p.path == "" {
			continue
		}
		if *p.dst, err = scim.ParsePath(p.path); err != nil {
			return nil, err
		}
	}
	if l.uid.Attr == "" {
		return nil, errors.New("the configuration reads no uid (attributes.uid)")
	}
	switch {
	case cfg.TokenFile != "":
		tok, err := readSecret(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		l.auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	case cfg.BasicUser != "":
		pw, err := readSecret(cfg.PasswordFile)
		if err != nil {
			return nil, err
		}
		user := cfg.BasicUser
		l.auth = func(r *http.Request) { r.SetBasicAuth(user, pw) }
	default:
		return nil, errors.New("no credentials configured")
	}
	t, err := scim.NewTransport(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	t.Proxy = nil // a login must not depend on, or leak a token to, a proxy
	l.client = &http.Client{
		Transport: t,
		Timeout:   timeout,
		// A redirect could carry the Authorization header elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return l, nil
}

// readSecret reads a credential file (syncd's Load has checked its mode).
// Errors never include the content.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("%s: not a single-line credential", path)
	}
	return s, nil
}

// LiveUser is what the service says about one user now.
type LiveUser struct {
	UID    int64
	Active bool
	Keys   []string // as published: not yet canonical
}

// User fetches the user whose userName is exactly name. It fails unless
// exactly one resource has that exact userName (SCIM compares userName
// case-insensitively; we do not) and it carries a uid.
func (l *Live) User(ctx context.Context, name string) (*LiveUser, error) {
	q := url.Values{}
	for k, v := range l.query {
		q[k] = v
	}
	lit, _ := json.Marshal(name) // a SCIM filter string is a JSON string
	f := l.userName.String() + " eq " + string(lit)
	if old := q.Get("filter"); old != "" {
		f = "(" + old + ") and " + f
	}
	q.Set("filter", f)
	if l.attrs {
		attrs := []string{l.userName.String(), l.uid.String(), l.keys.String()}
		if l.active.Attr != "" {
			attrs = append(attrs, l.active.String())
		}
		if l.keysAlt.Attr != "" {
			attrs = append(attrs, l.keysAlt.String())
		}
		q.Set("attributes", strings.Join(attrs, ","))
	}
	u := *l.base
	u.Path = strings.TrimRight(u.Path, "/") + "/" + l.endpoint
	u.RawPath = ""
	u.RawQuery = q.Encode()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/scim+json, application/json")
	l.auth(req)
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", u.Path, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLiveBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxLiveBody {
		return nil, errors.New("answer larger than 1 MiB")
	}
	var list struct {
		Resources []map[string]any `json:"Resources"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("list response: %v", err)
	}
	var match map[string]any
	for _, r := range list.Resources {
		if s, ok := lookup(r, l.userName).(string); ok && s == name {
			if match != nil {
				return nil, fmt.Errorf("more than one user named %q", name)
			}
			match = r
		}
	}
	if match == nil {
		return nil, fmt.Errorf("no user named %q", name)
	}
	lu := &LiveUser{Active: true}
	uid, ok := number(lookup(match, l.uid))
	if !ok {
		return nil, errors.New("user has no integer uid")
	}
	lu.UID = uid
	if l.active.Attr != "" {
		switch a := lookup(match, l.active).(type) {
		case nil:
			// Not sent: the snapshot's answer stands.
		case bool:
			lu.Active = a
		default:
			return nil, fmt.Errorf("active is %T, not a boolean", a)
		}
	}
	kv := lookup(match, l.keys)
	if kv == nil && l.keysAlt.Attr != "" {
		kv = lookup(match, l.keysAlt)
	}
	switch v := kv.(type) {
	case nil:
		// No keys now.
	case []any:
		for _, e := range v {
			switch k := e.(type) {
			case string:
				lu.Keys = append(lu.Keys, k)
			case map[string]any:
				if s, ok := field(k, "value").(string); ok {
					lu.Keys = append(lu.Keys, s)
				}
			}
		}
	case string:
		lu.Keys = []string{v}
	default:
		return nil, fmt.Errorf("ssh keys are %T", v)
	}
	return lu, nil
}

// lookup finds p in a resource; SCIM attribute names and URNs are
// case-insensitive. A sub-attribute of a multi-valued attribute is not
// supported (keys are read as a list; "value" of objects is taken).
func lookup(r map[string]any, p scim.Path) any {
	obj := r
	if !p.IsCore() {
		x, ok := field(r, p.URN).(map[string]any)
		if !ok {
			return nil
		}
		obj = x
	}
	v := field(obj, p.Attr)
	if p.Sub == "" {
		return v
	}
	if m, ok := v.(map[string]any); ok {
		return field(m, p.Sub)
	}
	return nil
}

func field(m map[string]any, name string) any {
	if v, ok := m[name]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

func number(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || n < 0 || n > config.MaxID {
			return 0, false
		}
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil || i < 0 || i > config.MaxID {
			return 0, false
		}
		return i, true
	}
	return 0, false
}
