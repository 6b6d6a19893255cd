# scimbridge: SCIM 2.0 identities as Linux and Slurm accounts, answered from a local cache.
#
#   make            build every artefact into $(BUILD)
#   make demo       the main job on the bundled SCIM fixture (changes no system file)
#   make test       install what the tests need, start their services, run every test
#   make bench      benchmarks (side by side with peers)
#   make fuzz       a longer fuzz run of the C reader and of syncd's SCIM
#                   decoding and validation (go test -fuzz)
#   make install / uninstall / deb

BUILD    ?= build
PREFIX   ?= /usr
DESTDIR  ?=
CC       ?= gcc
GO       ?= go
GOTAGS   := libsqlite3
# PIE: syncd and scim-keys run as root; ASLR for the whole binary (lintian).
GOFLAGS_ := -tags=$(GOTAGS) -trimpath -buildmode=pie
# The same hardening for Go's cgo parts (SQLite binding, os/user, net):
# fortified libc calls, stack protectors, and a relro/bindnow link (all
# three are Go binaries linked externally through cgo).
# SCIM_READER_SRC: a digest of the C reader's sources. syncd/cache/reader.c
# #includes c/*.c, which Go's build cache does not track (it hashes only
# the package's own files): without it a changed reader was not rebuilt
# and syncd verified snapshots with the old one.
READER_SRC_HASH := $(shell cat c/*.c c/*.h include/*.h 2>/dev/null | sha1sum | cut -c1-16)
export CGO_CFLAGS ?= -O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong -DSCIM_READER_SRC=$(READER_SRC_HASH)
GOLDHARD := -extldflags '-Wl,-z,relro -Wl,-z,now'
# 1.2.3 on a tag, else X.Y.Z+git<UTC commit time>.<hash> after a tag, 0.1.0~git... before
# the first one, 0~unknown without git: sorts by date and below the next tag (packaging/version.sh).
VERSION  ?= $(shell packaging/version.sh 2>/dev/null || echo 0~unknown)

# The reader is compiled into each module with hidden visibility, so two
# modules loaded into one process (sshd: NSS and PAM) never share symbols.
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror=implicit-function-declaration \
            -fPIC -fvisibility=hidden -D_GNU_SOURCE -Iinclude
# Hardening for everything C (the modules run inside sshd, bash, slurmstepd):
# fortified libc calls and stack protectors; the modules' link flags add
# relro and bindnow (MOD_LDFLAGS).
CFLAGS   += -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -fstack-protector-strong
LDLIBS_MOD := -lpthread

# The one reader, split by concern (c/reader.h lists the parts); cgo
# compiles the same parts through syncd/cache/reader.c.
READER_SRC := c/common.c c/config.c c/sql.c c/nssindex.c c/answer.c c/passwd.c \
              c/group.c c/initgroups.c c/records.c c/localgroup.c
READER_HDR := include/scimcache.h c/reader.h

# Each module carries a private SQLite (c/sqlite_private.c says why and how
# it is configured): one object, hidden symbols, linked into every module
# and the test tools, with the reader compiled against its header. Each
# module's version script exports only its entry points.
SQLITE_DIR := $(BUILD)/sqlite
SQLITE_OBJ := $(SQLITE_DIR)/sqlite3.o
SQLITE_MOD := github.com/mattn/go-sqlite3
MOD_CFLAGS  = -I$(SQLITE_DIR)
MOD_DEPS    = $(READER_SRC) $(READER_HDR) $(SQLITE_OBJ)
MOD_LDFLAGS = -shared -Wl,-O1 -Wl,-z,relro -Wl,-z,now -Wl,--hash-style=gnu -Wl,--as-needed
# Each module's debug info is split off into $@.debug (linked by
# .gnu_debuglink, so gdb finds it next to the module or under
# /usr/lib/debug): the module loaded into every process, and installed, is
# about 1 MB instead of 5 (issue 22: a process's first lookup pays its load).
SPLIT_DEBUG = objcopy --only-keep-debug $@ $@.debug && \
              objcopy --strip-debug --remove-section=.comment --add-gnu-debuglink=$@.debug $@

MODULES := $(BUILD)/libnss_scim.so.2 $(BUILD)/scimbridge/libscimbridge-sqlite.so $(BUILD)/pam_scim.so \
           $(BUILD)/spank_scim.so
GOBINS  := $(BUILD)/syncd $(BUILD)/scim-keys $(BUILD)/mylimits $(BUILD)/scim-testserver $(BUILD)/scim-nssindex
TOOLS   := $(BUILD)/scimlookup $(BUILD)/spank_host

.PHONY: all modules gobins tools deps demo-deps test test-go test-c test-nss test-syncd test-slurm test-login test-kube \
        bench fuzz demo install uninstall deb clean

all: modules gobins tools

modules: $(MODULES)
gobins: $(GOBINS)
tools: $(TOOLS)

$(BUILD):
	mkdir -p $@

# The amalgamation: go-sqlite3's copy (the version go.mod pins), or
# SQLITE_AMALGAMATION=DIR with sqlite3.c/sqlite3.h (e.g. unpacked from
# Debian's sqlite3 source package). Nothing is downloaded that the Go
# module proxy does not already serve for the Go build. Unchanged files
# are left alone (go.mod changes for other modules rebuild nothing).
$(SQLITE_DIR)/sqlite3.c $(SQLITE_DIR)/sqlite3.h &: go.mod go.sum | $(BUILD)
	@mkdir -p $(SQLITE_DIR)
	@set -e; d="$(SQLITE_AMALGAMATION)"; \
	if [ -z "$$d" ]; then $(GO) mod download $(SQLITE_MOD); \
	  d=$$($(GO) list -m -f '{{.Dir}}' $(SQLITE_MOD)); fi; \
	if [ -f "$$d/sqlite3-binding.c" ]; then c=$$d/sqlite3-binding.c h=$$d/sqlite3-binding.h; \
	elif [ -f "$$d/sqlite3.c" ]; then c=$$d/sqlite3.c h=$$d/sqlite3.h; \
	else echo "no SQLite amalgamation in '$$d' (go mod download, or SQLITE_AMALGAMATION=DIR)"; exit 1; fi; \
	if cmp -s "$$c" $(SQLITE_DIR)/sqlite3.c && cmp -s "$$h" $(SQLITE_DIR)/sqlite3.h; then exit 0; fi; \
	echo "private SQLite from $$c"; \
	cp "$$c" $(SQLITE_DIR)/sqlite3.c.tmp; cp "$$h" $(SQLITE_DIR)/sqlite3.h.tmp; \
	chmod 0644 $(SQLITE_DIR)/sqlite3.c.tmp $(SQLITE_DIR)/sqlite3.h.tmp; \
	mv $(SQLITE_DIR)/sqlite3.h.tmp $(SQLITE_DIR)/sqlite3.h; mv $(SQLITE_DIR)/sqlite3.c.tmp $(SQLITE_DIR)/sqlite3.c

# -fvisibility=hidden comes with CFLAGS; -w: the amalgamation is not ours.
$(SQLITE_OBJ): c/sqlite_private.c $(SQLITE_DIR)/sqlite3.c $(SQLITE_DIR)/sqlite3.h
	$(CC) $(filter-out -Wall -Wextra -Werror%,$(CFLAGS)) -w -I$(SQLITE_DIR) -c -o $@ c/sqlite_private.c

# The NSS module carries no SQLite: it loads $(SQLITE_LIB) (beside itself,
# under scimbridge/) on its first call that needs SQL (c/sqlite_api.h: a
# new process's first lookup paid for loading and relocating SQLite).
# -z defs: every symbol it uses resolves in it or libc, so a sqlite3_* call
# not routed through the table fails here, not at load time.
SQLITE_LIB := scimbridge/libscimbridge-sqlite.so
$(BUILD)/libnss_scim.so.2: nss/nss_scim.c nss/libnss_scim.map $(READER_SRC) $(READER_HDR) c/sqlite_api.h \
                           $(SQLITE_DIR)/sqlite3.h $(BUILD)/$(SQLITE_LIB) | $(BUILD)
	$(CC) $(CFLAGS) $(MOD_CFLAGS) -DSCIM_SQLITE_DLOPEN -DSCIM_SQLITE_LIB='"$(SQLITE_LIB)"' \
	  $(MOD_LDFLAGS) -Wl,-z,defs -Wl,-soname,libnss_scim.so.2 \
	  -Wl,--version-script=nss/libnss_scim.map -o $@ nss/nss_scim.c $(READER_SRC) $(LDLIBS_MOD)
	$(SPLIT_DEBUG)

# The NSS module's SQLite: the private object and the one exported table.
$(BUILD)/$(SQLITE_LIB): c/sqlite_table.c c/sqlite_api.h c/sqlite_private.map $(SQLITE_OBJ) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(MOD_CFLAGS) -Werror=incompatible-pointer-types $(MOD_LDFLAGS) -Wl,-z,defs \
	  -Wl,-soname,libscimbridge-sqlite.so -Wl,--version-script=c/sqlite_private.map \
	  -o $@ c/sqlite_table.c $(SQLITE_OBJ) $(LDLIBS_MOD)
	$(SPLIT_DEBUG)

$(BUILD)/pam_scim.so: pam/pam_scim.c pam/pam_scim.map $(MOD_DEPS) | $(BUILD)
	$(CC) $(CFLAGS) $(MOD_CFLAGS) $(MOD_LDFLAGS) -Wl,--version-script=pam/pam_scim.map \
	  -o $@ pam/pam_scim.c $(READER_SRC) $(SQLITE_OBJ) $(LDLIBS_MOD) -lpam
	$(SPLIT_DEBUG)

# spank.h comes from libslurm-dev; symbols resolve from the host process.
SPANK_H := $(firstword $(wildcard /usr/include/slurm/spank.h /usr/local/include/slurm/spank.h))
$(BUILD)/spank_scim.so: spank/spank_scim.c spank/spank_scim.map $(MOD_DEPS) | $(BUILD)
	@test -n "$(SPANK_H)" || { echo "spank.h not found: install libslurm-dev (make deps)"; exit 1; }
	$(CC) $(CFLAGS) $(MOD_CFLAGS) -I$(dir $(SPANK_H)).. $(MOD_LDFLAGS) -Wl,--version-script=spank/spank_scim.map \
	  -o $@ spank/spank_scim.c $(READER_SRC) $(SQLITE_OBJ) $(LDLIBS_MOD)
	$(SPLIT_DEBUG)

$(BUILD)/scimlookup: tests/c/scimlookup.c $(MOD_DEPS) | $(BUILD)
	$(CC) $(CFLAGS) $(MOD_CFLAGS) -DSCIM_VERSION='"$(VERSION)"' -Wl,-z,relro -Wl,-z,now \
	  -o $@ tests/c/scimlookup.c $(READER_SRC) $(SQLITE_OBJ) $(LDLIBS_MOD)

# Plays sbatch for spank_scim.so without Slurm: the demo's SPANK decision.
$(BUILD)/spank_host: tests/c/spank_host.c | $(BUILD)
	@test -n "$(SPANK_H)" || { echo "spank.h not found: install libslurm-dev (make deps)"; exit 1; }
	$(CC) $(CFLAGS) -fvisibility=default -I$(dir $(SPANK_H)).. -rdynamic -o $@ tests/c/spank_host.c -ldl

# Go binaries: always rebuilt by go (it caches), so they are phony-ish.
$(BUILD)/syncd: FORCE | $(BUILD)
	$(GO) build $(GOFLAGS_) -ldflags "-X main.version=$(VERSION) $(GOLDHARD)" -o $@ ./syncd
$(BUILD)/scim-keys: FORCE | $(BUILD)
	$(GO) build $(GOFLAGS_) -ldflags "-X main.version=$(VERSION) $(GOLDHARD)" -o $@ ./syncd/cmd/scim-keys
$(BUILD)/mylimits: FORCE | $(BUILD)
	$(GO) build $(GOFLAGS_) -ldflags "-X main.version=$(VERSION) $(GOLDHARD)" -o $@ ./syncd/cmd/mylimits
$(BUILD)/scim-testserver: FORCE | $(BUILD)
	$(GO) build $(GOFLAGS_) -o $@ ./tests/scimserver/cmd/scim-testserver
$(BUILD)/scim-nssindex: FORCE | $(BUILD)
	$(GO) build $(GOFLAGS_) -o $@ ./tests/tools/scim-nssindex
FORCE:

# Debian packages the tests use, installed only when missing (needs root).
deps:
	tests/install-deps.sh

# Every suite prints PASS:/FAIL: lines (go test -v: --- PASS/--- FAIL);
# tests/run adds them up and ends with "N passed, N failed".
# deps first, then a fresh make: spank.h is looked up when a make starts,
# so on a fresh machine the build must begin after deps installed it.
test: deps
	$(MAKE) all
	tests/run

test-go: all
	tests/run go
test-c: all
	tests/run c
test-nss: all
	tests/run nss
test-syncd: all
	tests/run syncd
test-slurm: all
	tests/run slurm
test-login: all
	tests/run login
# The Kubernetes suite builds (once, cached under ~/.cache/scimbridge-kube)
# or finds kube-apiserver, kube-controller-manager, kubectl and etcd:
# tests/kube/binaries.sh.
test-kube: all
	tests/run kube

bench: deps
	$(MAKE) all
	tests/bench/run

fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} tests/c/fuzz.sh
	GO_FUZZ_SECONDS=$$(( $${FUZZ_SECONDS:-600} / 4 )) tests/syncd/fuzz.sh

demo-deps:
	tests/install-deps.sh build

demo: demo-deps
	$(MAKE) all
	tests/demo.sh

# Install layout. The modules ignore PREFIX: glibc, Linux-PAM and Slurm
# load them only from their own directories.
MULTIARCH   ?= $(shell $(CC) -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
NSSDIR      ?= /lib/$(MULTIARCH)
PAMDIR      ?= /lib/$(MULTIARCH)/security
# Slurm's PluginDir: Debian's, else the usual RPM/source-build ones.
SLURM_PLUGINDIR ?= $(firstword $(wildcard /usr/lib/$(MULTIARCH)/slurm-wlm /usr/lib64/slurm /usr/lib/slurm \
                     /usr/local/lib/slurm) /usr/lib/$(MULTIARCH)/slurm-wlm)
UNITDIR     ?= $(or $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null),/lib/systemd/system)
PAMCONFDIR  ?= /usr/share/pam-configs
SYSCONFDIR  ?= /etc
STATEDIR    ?= /var/lib/scimbridge
SBINDIR     ?= $(PREFIX)/sbin
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/scimbridge
INSTALL_DIRS = NSSDIR=$(NSSDIR) PAMDIR=$(PAMDIR) SLURM_PLUGINDIR=$(SLURM_PLUGINDIR) UNITDIR=$(UNITDIR) \
        PAMCONFDIR=$(PAMCONFDIR) SYSCONFDIR=$(SYSCONFDIR) STATEDIR=$(STATEDIR) SBINDIR=$(SBINDIR) \
        BINDIR=$(BINDIR) MANDIR=$(MANDIR) DOCDIR=$(DOCDIR)

# Installs every artefact but changes no configuration: nsswitch.conf,
# PAM stacks, sshd_config and plugstack.conf are the admin's (the deb's
# postinst prints the lines). packaging/install.sh holds the file list.
install: $(MODULES) $(BUILD)/syncd $(BUILD)/scim-keys $(BUILD)/mylimits $(BUILD)/scimlookup
	packaging/install.sh install "$(DESTDIR)" "$(BUILD)" $(INSTALL_DIRS)

# Removes exactly what install placed; never the config in
# $(SYSCONFDIR)/scimbridge or the cache in $(STATEDIR).
uninstall:
	packaging/install.sh uninstall "$(DESTDIR)" "$(BUILD)" $(INSTALL_DIRS)

deb: $(MODULES) $(BUILD)/syncd $(BUILD)/scim-keys $(BUILD)/mylimits $(BUILD)/scimlookup
	packaging/deb/build.sh "$(BUILD)" "$(VERSION)"

clean:
	rm -rf $(BUILD)
