package pipeline

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/source/scim"
)

// NewClient builds the SCIM client from the configuration, reading the
// credential files now (so a rotated token is picked up on reload).
func NewClient(cfg *config.Config, log logrus.FieldLogger) (*scim.Client, error) {
	o := scim.Options{
		BaseURL:                cfg.BaseURL,
		CAFile:                 cfg.CAFile,
		RequestTimeout:         cfg.RequestTimeout,
		ReadTimeout:            cfg.ReadTimeout,
		TimeoutRetryBudget:     cfg.PollInterval,
		MaxRetries:             cfg.MaxRetries,
		UsersEndpoint:          cfg.UsersEndpoint,
		GroupsEndpoint:         cfg.GroupsEndpoint,
		UsersQuery:             values(cfg.UsersQuery),
		GroupsQuery:            values(cfg.GroupsQuery),
		Paging:                 cfg.Paging,
		PageSize:               cfg.PageSize,
		PageCap:                cfg.PageCap,
		MaxUsers:               cfg.MaxUsers,
		MaxGroups:              cfg.MaxGroups,
		MaxResponseBytes:       cfg.MaxResponseBytes,
		MaxFetchBytes:          cfg.MaxFetchBytes,
		AllowedRedirectOrigins: cfg.AllowedRedirectOrigins,
		SortBy:                 cfg.SortBy,
		GroupMembers:           cfg.GroupMembers,
		NoAttributesParam:      !cfg.SendAttributes,
		ChangeOverlap:          cfg.ChangeOverlap,
		Log:                    log,
		Attrs: scim.Attrs{
			UserName: cfg.Attributes.UserName, UID: cfg.Attributes.UID, GID: cfg.Attributes.GID,
			GECOS: cfg.Attributes.GECOS, Home: cfg.Attributes.Home, Shell: cfg.Attributes.Shell,
			SSHKeys: cfg.Attributes.SSHKeys, SSHKeysAlt: cfg.Attributes.SSHKeysAlt, Active: cfg.Attributes.Active,
			Quota: cfg.Attributes.HomeQuota, GroupQuota: cfg.Attributes.ProjectQuota,
			GroupName: cfg.Attributes.GroupName, GroupGID: cfg.Attributes.GroupGID,
		},
	}
	var err error
	if cfg.TokenFile != "" {
		if o.Token, err = readSecret(cfg.TokenFile); err != nil {
			return nil, err
		}
	} else if cfg.BasicUser != "" {
		o.BasicUser = cfg.BasicUser
		if o.BasicPassword, err = readSecret(cfg.PasswordFile); err != nil {
			return nil, err
		}
	}
	return scim.New(o)
}

// readSecret reads a credential file: root-only, one line.
func readSecret(path string) (string, error) {
	if err := config.CheckSecretFile(path); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: empty", path)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("%s: more than one line", path)
	}
	return s, nil
}

func values(m map[string]string) url.Values {
	v := url.Values{}
	for k, s := range m {
		v.Set(k, s)
	}
	return v
}
