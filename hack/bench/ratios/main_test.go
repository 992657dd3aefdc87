package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
BenchmarkDecide/row=9-2   	52776420	        24 ns/op	       0 B/op	       0 allocs/op
BenchmarkDrain/engine/workers=16-2 	4	 300000000 ns/op	       300.0 ms-to-destroy
BenchmarkDrain/engine/workers=16-2 	4	 310000000 ns/op	       310.0 ms-to-destroy
BenchmarkDrain/engine/workers=16-2 	4	 900000000 ns/op	       900.0 ms-to-destroy
BenchmarkDrain/seed-2      	1	4500000000 ns/op	      4500 ms-to-destroy
BenchmarkSteadyState/engine-2 	1	10000000000 ns/op	      9000 checks/s	         0.05 cpu-cores
BenchmarkSteadyState/seed-2   	1	10000000000 ns/op	     10000 checks/s	         0.025 cpu-cores
PASS
`

func TestRatios(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(strings.NewReader(sample), &out))
	lines := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 {
			lines[f[0]+" "+f[1]] = l
		}
	}
	// Medians (310 of 300, 310, 900), paired with /seed, lower is better.
	assert.Contains(t, lines["BenchmarkDrain/engine/workers=16 ms-to-destroy"], "310")
	assert.Contains(t, lines["BenchmarkDrain/engine/workers=16 ms-to-destroy"], "14.5x better")
	assert.Contains(t, lines["BenchmarkSteadyState/engine cpu-cores"], "2x worse")
	assert.Contains(t, lines["BenchmarkSteadyState/engine checks/s"], "1.11x worse", "higher is better")
	assert.Contains(t, lines["BenchmarkDecide/row=9 ns/op"], "-", "no baseline")
	assert.NotContains(t, out.String(), "BenchmarkDrain/seed ", "baselines are not listed alone")
}

func TestRatiosRejectsGarbage(t *testing.T) {
	err := run(strings.NewReader("BenchmarkX-2 1 abc ns/op\n"), &strings.Builder{})
	require.ErrorContains(t, err, "abc")
}
