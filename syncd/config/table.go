package config

import "fmt"

// Table is a table of the syncd config that its own package decodes and
// checks ([slurm], [kubernetes]): T is that package's Config.
type Table[T any] interface {
	WithDefaults() T
	Check() error
}

// LoadTable loads the config file at path and its table [name], decoded
// by decode (DecodeSlurm, DecodeKubernetes), given its defaults and
// checked; an error naming the file without the table, and the file with
// every problem the check found.
func LoadTable[T Table[T]](path, name string, decode func(*Config, any) error) (*Config, T, error) {
	var t T
	cfg, err := Load(path)
	if err != nil {
		return nil, t, err
	}
	if !cfg.md.IsDefined(name) {
		return nil, t, fmt.Errorf("%s has no [%s] table", path, name)
	}
	if err := decode(cfg, &t); err != nil {
		return nil, t, err
	}
	t = t.WithDefaults()
	if err := t.Check(); err != nil {
		return nil, t, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, t, nil
}
