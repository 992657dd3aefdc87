// Package beforedel_test holds what a reservation's DEL must not reach, and
// what a dry run's round must tell, as an independent review found them
// broken: a reservation file whose container ID or interface is none libcni
// accepts (a path into its cache) is never touched; a file of libcni's cache
// where the DEL would read and remove its entry keeps the reservation (row
// 16); and a dry run tells what one DEL releases, as a real round frees it.
package beforedel_test
