// Package confchange_test holds the collector's host-local round to its promises while ConfDir changes under it:
// each DEL is decided on ConfDir as it is right before it, and on what the round read of the data directories that
// config names; a data directory named only since is one it has not read.
package confchange_test
