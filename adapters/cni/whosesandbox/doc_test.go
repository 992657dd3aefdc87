// Package whosesandbox_test holds which pod a sandbox is of, and what its
// container's cache entries tell of it, as an independent review found
// them broken: a sandbox the runtime names as two pods' (twice, or by its
// label and its metadata) decides nothing; a listing that leaves its pod's
// label empty hides no pod another listing names; another pod's entry of
// the same container tells of its network namespace (row 4); and a running
// sandbox listed without an ID keeps, on a sandbox change, the sandbox it
// may be (row 6).
package whosesandbox_test
