//go:build !cgo || !linux

package receiver

// keepArenaTops is glibc's (malloc.go); nothing to do elsewhere.
func keepArenaTops() {}
