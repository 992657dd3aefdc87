// Package contested_test holds the collector's promises on a sandbox the cache holds as another pod's (row 6's
// "never the later sandbox", whatever kind of entry names the other pod) and a dry run's Tracker that refuses a
// Track, each proven once by an audit.
package contested_test
