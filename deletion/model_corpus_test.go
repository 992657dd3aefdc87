package deletion_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
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

// readFuzzModel reads a corpus file of FuzzModel, in the "go test fuzz
// v1" format: a byte (the mode) and a []byte (the operations).
func readFuzzModel(path string) (mode int, data []byte, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, nil, err
	}
	header, body, _ := strings.Cut(string(raw), "\n")
	if header != "go test fuzz v1" {
		return 0, nil, fmt.Errorf("first line %q, want %q", header, "go test fuzz v1")
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if len(lines) != 2 {
		return 0, nil, fmt.Errorf("%d values, want a byte and a []byte", len(lines))
	}
	m, err := fuzzLiteral(lines[0], "byte")
	if err != nil || len(m) != 1 {
		return 0, nil, fmt.Errorf("%s is not a byte value (%v)", lines[0], err)
	}
	data, err = fuzzLiteral(lines[1], "[]byte")
	return int(m[0]), data, err
}

// fuzzLiteral reads a value of a corpus file, typ(literal): a byte of a rune
// literal or a []byte of a string literal.
func fuzzLiteral(line, typ string) ([]byte, error) {
	expr, err := parser.ParseExpr(strings.TrimSpace(line))
	if err != nil {
		return nil, err
	}
	call, ok := expr.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 || types.ExprString(call.Fun) != typ {
		return nil, fmt.Errorf("%s is not a %s value", line, typ)
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok {
		return nil, fmt.Errorf("%s is not a %s of a literal", line, typ)
	}
	switch {
	case typ == "byte" && lit.Kind == token.CHAR:
		r, _, _, err := strconv.UnquoteChar(lit.Value[1:len(lit.Value)-1], '\'')
		return []byte{byte(r)}, err
	case typ == "[]byte" && lit.Kind == token.STRING:
		s, err := strconv.Unquote(lit.Value)
		return []byte(s), err
	}
	return nil, fmt.Errorf("%s is not a %s of a literal", line, typ)
}

// modelCorpusRun is what one corpus file does on the model's side.
type modelCorpusRun struct {
	ops  []modelOp
	done []modelDone
	errs []string
}

// runModelAlone runs the operations data decodes to on the model alone, in
// mode, as runModel does but the engine and the last Sweep.
func runModelAlone(mode int, data []byte) modelCorpusRun {
	w := newModelRun(&modelCluster{dead: map[string]bool{}}, mode)
	ops := decodeModelOps(data)
	for i, op := range ops {
		steps, checked, finish := w.apply(op)
		for _, step := range steps {
			step.model()
			if mode&modeRate != 0 {
				w.m.endInstant()
			}
		}
		finish()
		if checked {
			w.spend(ops[:i+1])
		}
	}
	return modelCorpusRun{ops: ops, done: w.done, errs: w.m.errs}
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
		mode, data, err := readFuzzModel(path)
		if !assert.NoError(t, err, name) {
			continue
		}
		mode &= modelModes
		run := runModelAlone(mode, data)
		assert.Empty(t, run.errs, name)
		reached("mode "+modeString(mode), name)
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
				if k.listRow != 0 && k.listRow != k.row {
					reached("a veto of the SandboxConfirmer", name)
				}
				for _, what := range []string{"reported", "dropped", "waits for its turn", "leaves the line"} {
					if strings.Contains(k.outcome, what) {
						reached(what, name)
					}
				}
				if k.why == "sweep" && strings.Contains(k.outcome, "waits for its turn") {
					reached("a Sweep that waits for a turn", name)
				}
				if k.why == "turn" && strings.HasPrefix(k.outcome, "destroyed") {
					reached("a destroy on its turn", name)
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
				if strings.Contains(d.note, "waiting for its turn") {
					reached("Untrack of a PU waiting for its turn", name)
				}
			case modelTrigger:
				if strings.HasPrefix(d.note, "waiting for a retry") {
					reached("Trigger of a PU waiting for a retry", name)
				}
			}
		}
		t.Logf("%s (%s): %d operations, %d doing nothing:\n%s", name, modeString(mode), len(run.ops), len(run.ops)-effective, strings.Join(log, "\n"))
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
	for _, row := range []int{1, 2, 3, 4, 6, 7, 8, 9, 10, 12} { // the model has no row 5 nor 11
		want = append(want, fmt.Sprintf("row %d", row))
	}
	want = append(want, "sweep check", "trigger check", "periodic check", "retry check", "turn check", "a veto of the Confirmer",
		"Untrack of a PU waiting for a retry", "Trigger of a PU waiting for a retry", "Move to node-b", "Move unbound",
		// The modes, and what each does.
		"mode defaults", "mode DryRun", "mode SandboxConfirmer over a list", "mode DestroyRate 1/s", "mode DestroyBurst 2, DestroyRate 1/s",
		"reported", "dropped", "a veto of the SandboxConfirmer",
		"waits for its turn", "a destroy on its turn", "a Sweep that waits for a turn", "leaves the line", "Untrack of a PU waiting for its turn")
	for _, kind := range []int{modelFailNextGet, modelFailNextDestroy} {
		for v := range 4 {
			want = append(want, modelOpNames[kind]+" "+modelOp{kind: kind, variant: v}.fault())
		}
	}
	for _, what := range want {
		assert.NotEmpty(t, did[what], "no file of %s reaches %s", modelCorpus, what)
	}
}
