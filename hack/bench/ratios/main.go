package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// higherIsBetter lists the units where a larger number is the better one.
var higherIsBetter = map[string]bool{"checks/s": true}

// procSuffix is the -GOMAXPROCS suffix go test appends to benchmark names.
var procSuffix = regexp.MustCompile(`-\d+$`)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ratios <go test -bench output>")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	if err := run(f, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	// samples[name][unit] holds every value seen.
	samples := map[string]map[string][]float64{}
	var units = map[string][]string{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(fields[0], "")
		if samples[name] == nil {
			samples[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return fmt.Errorf("%s: %q: %w", name, fields[i], err)
			}
			unit := fields[i+1]
			if samples[name][unit] == nil {
				units[name] = append(units[name], unit)
			}
			samples[name][unit] = append(samples[name][unit], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}

	names := make([]string, 0, len(samples))
	for name := range samples {
		names = append(names, name)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tmetric\tengine\tbaseline\tengine is\truns\t")
	for _, name := range names {
		base := ""
		if i := strings.Index(name, "/engine"); i >= 0 {
			base = name[:i] + "/seed"
		} else if strings.Contains(name, "/seed") {
			continue
		}
		for _, unit := range units[name] {
			e := median(samples[name][unit])
			line := fmt.Sprintf("%s\t%s\t%s\t", name, unit, format(e))
			b, ok := samples[base][unit]
			switch {
			case !ok:
				line += "-\t-\t"
			default:
				bm := median(b)
				line += format(bm) + "\t" + better(unit, e, bm) + "\t"
			}
			fmt.Fprintf(tw, "%s%d\t\n", line, len(samples[name][unit]))
		}
	}
	return tw.Flush()
}

// better says how the engine's median e compares with the baseline's b.
func better(unit string, e, b float64) string {
	if e == b {
		return "same"
	}
	if higherIsBetter[unit] {
		e, b = b, e
	}
	if e == 0 {
		return "∞x better"
	}
	if r := b / e; r >= 1 {
		return fmt.Sprintf("%.3gx better", r)
	}
	return fmt.Sprintf("%.3gx worse", e/b)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func format(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}
