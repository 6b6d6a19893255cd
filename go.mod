module github.com/scimbridge/scimbridge

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/elimity-com/scim v0.0.0-20260728105928-2641426a1539
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/prometheus/client_golang v1.25.0
	github.com/sirupsen/logrus v1.10.2
	golang.org/x/crypto v0.59.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/q-uint/parser v0.3.1 // indirect
	github.com/q-uint/xsd-datetime v1.0.0 // indirect
	github.com/scim2/filter-parser/v2 v2.3.1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
