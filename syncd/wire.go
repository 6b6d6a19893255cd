package main

import (
	"github.com/scimbridge/scimbridge/syncd/logging"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/publish"
)

// The pipeline (read -> validate -> write -> verify -> publish) and the
// polling loop live in syncd/pipeline; package main wires commands to it.

func init() { pipeline.Version = version }

// newClient builds the SCIM client from the configuration (check-config
// and the tests use it too).
var newClient = pipeline.NewClient

// What the receiver (cmd_receive.go) calls of the publishing head, which
// lives in syncd/publish.
var (
	publishAfterPoll = publish.AfterPoll
	startHead        = publish.StartHead
)

// newLogger is syncd's logger for cfg (syncd/logging).
var newLogger = logging.New
