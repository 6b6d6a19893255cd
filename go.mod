module github.com/scimbridge/scimbridge

go 1.26.0
