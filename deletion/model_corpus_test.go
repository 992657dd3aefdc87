package deletion_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modelCorpus is the committed corpus of FuzzModel, which go test runs
// without -fuzz.
const modelCorpus = "testdata/fuzz/FuzzModel"

// readFuzzBytes reads a corpus file of a fuzz test of one []byte argument,
// in the "go test fuzz v1" format.
func readFuzzBytes(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	header, body, _ := strings.Cut(string(raw), "\n")
	if header != "go test fuzz v1" {
		return nil, fmt.Errorf("first line %q, want %q", header, "go test fuzz v1")
	}
	if lines := strings.Split(strings.TrimSpace(body), "\n"); len(lines) != 1 {
		return nil, fmt.Errorf("%d values, want one []byte", len(lines))
	}
	expr, err := parser.ParseExpr(strings.TrimSpace(body))
	if err != nil {
		return nil, err
	}
	call, ok := expr.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil, fmt.Errorf("%s is not a []byte(...) value", body)
	}
	if typ, ok := call.Fun.(*ast.ArrayType); !ok || typ.Len != nil || fmt.Sprint(typ.Elt) != "byte" {
		return nil, fmt.Errorf("%s is not a []byte value", body)
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return nil, fmt.Errorf("%s is not a []byte of a string literal", body)
	}
	s, err := strconv.Unquote(lit.Value)
	return []byte(s), err
}

// modelCorpusRun is what one corpus file does on the model's side.
type modelCorpusRun struct {
	ops  []modelOp
	done []modelDone
}

// runModelAlone runs the operations data decodes to on the model alone,
// as runModel does but the engine and the last Sweep.
func runModelAlone(data []byte) modelCorpusRun {
	w := newModelRun(&modelCluster{})
	ops := decodeModelOps(data)
	for i, op := range ops {
		if _, checked := w.apply(op); checked {
			w.spend(ops[:i+1])
		}
	}
	return modelCorpusRun{ops: ops, done: w.done}
}

// TestFuzzModelCorpusCoversEveryOperation: the committed corpus of
// FuzzModel, which is what go test runs of it besides the f.Add seeds,
// reaches every operation the model decodes, doing something (a Track of a new PU, an Untrack of a
// tracked one, a fault a check meets, an Advance that brings a periodic
// check and one that brings a retry...), and every row of the table the
// model has. Each file is in the "go test fuzz v1" format, checks a PU, and
// a file named rowN-... reaches row N. Run with -v to read what each file
// does.
func TestFuzzModelCorpusCoversEveryOperation(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(modelCorpus, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	did := map[string][]string{} // what was reached, by the files reaching it
	reached := func(what, file string) { did[what] = append(did[what], file) }
	rowName := regexp.MustCompile(`^row(\d+)-`)
	for _, path := range files {
		name := filepath.Base(path)
		data, err := readFuzzBytes(path)
		if !assert.NoError(t, err, name) {
			continue
		}
		run := runModelAlone(data)
		var log []string
		checks, effective := 0, 0
		rows := map[int]bool{}
		for i, op := range run.ops {
			d := run.done[i]
			log = append(log, fmt.Sprintf("  %-45s %s", op, d))
			if d.noop() {
				continue
			}
			effective++
			reached(modelOpNames[op.kind], name)
			for _, k := range d.checks {
				checks++
				rows[k.row] = true
				reached(fmt.Sprintf("row %d", k.row), name)
				reached(k.why+" check", name)
				if k.vetoed {
					reached("a veto of the Confirmer", name)
				}
			}
			switch op.kind {
			case modelFailNextGet, modelFailNextDestroy:
				reached(modelOpNames[op.kind]+" "+op.fault(), name)
			case modelMove:
				reached("Move "+op.move(), name)
			case modelUntrack:
				if strings.Contains(d.note, "waiting for a retry") {
					reached("Untrack of a PU waiting for a retry", name)
				}
			case modelTrigger:
				if strings.HasPrefix(d.note, "waiting for a retry") {
					reached("Trigger of a PU waiting for a retry", name)
				}
			}
		}
		t.Logf("%s: %d operations, %d doing nothing:\n%s", name, len(run.ops), len(run.ops)-effective, strings.Join(log, "\n"))
		assert.NotZero(t, effective, "%s: every operation does nothing", name)
		assert.NotZero(t, checks, "%s: checks no PU", name)
		if m := rowName.FindStringSubmatch(name); m != nil {
			row, _ := strconv.Atoi(m[1])
			assert.True(t, rows[row], "%s: never reaches row %d", name, row)
		}
	}

	var want []string
	for _, name := range modelOpNames {
		want = append(want, name)
	}
	for _, row := range []int{1, 2, 3, 4, 6, 7, 8, 9, 10} { // the model has no row 5 nor 11
		want = append(want, fmt.Sprintf("row %d", row))
	}
	want = append(want, "sweep check", "trigger check", "periodic check", "retry check", "a veto of the Confirmer",
		"Untrack of a PU waiting for a retry", "Trigger of a PU waiting for a retry", "Move to node-b", "Move unbound")
	for _, kind := range []int{modelFailNextGet, modelFailNextDestroy} {
		for v := range 4 {
			want = append(want, modelOpNames[kind]+" "+modelOp{kind: kind, variant: v}.fault())
		}
	}
	for _, what := range want {
		assert.NotEmpty(t, did[what], "no file of %s reaches %s", modelCorpus, what)
	}
}
