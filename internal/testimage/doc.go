// Package testimage reads the OCI layouts that `make images` writes, for
// the tests that look inside an image: its manifest, its config and the
// entries of its layers, in order.
package testimage
