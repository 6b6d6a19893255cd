package main

import "github.com/scimbridge/scimbridge/syncd/pipeline"

// The pipeline (read -> validate -> write -> verify -> publish) and the
// polling loop live in syncd/pipeline; package main wires commands to it.

func init() { pipeline.Version = version }

// newClient builds the SCIM client from the configuration (check-config
// and the tests use it too).
var newClient = pipeline.NewClient
