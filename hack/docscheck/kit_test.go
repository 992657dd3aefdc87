package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exported returns the exported functions, and the exported methods of
// exported types by type, of the package in dir (its non-test files).
func exported(t *testing.T, dir string) (funcs []string, methods map[string][]string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	methods = map[string][]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			if fd.Recv == nil {
				funcs = append(funcs, fd.Name.Name)
				continue
			}
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
				methods[id.Name] = append(methods[id.Name], fd.Name.Name)
			}
		}
	}
	return funcs, methods
}

// portMethods are the methods by which a kit's type is a port or an
// Observer: the guide names the port, not its method.
var portMethods = map[string]bool{"GetPod": true, "SandboxID": true, "SandboxDead": true, "DestroyPU": true,
	"ListPUs": true, "Observe": true, "Errorf": true, "Fatalf": true, "Helper": true, "Cleanup": true}

// TestTheTestingGuideNamesTheWholeKit: docs/sdk/testing.md's table of the
// kit names every exported function of deletion/deletiontest and every
// method of its types but those by which they are ports, so that a method a
// test uses is never one the guide does not tell.
func TestTheTestingGuideNamesTheWholeKit(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(root, "docs", "sdk", "testing.md"))
	require.NoError(t, err)
	funcs, methods := exported(t, filepath.Join(root, "deletion", "deletiontest"))
	require.NotEmpty(t, methods["Policy"], "the kit's Policy has methods")
	named := func(name string) bool {
		return regexp.MustCompile("[`.]" + regexp.QuoteMeta(name) + "[`(]").Match(guide)
	}
	for _, f := range funcs {
		assert.True(t, named(f), "docs/sdk/testing.md does not name deletiontest.%s", f)
	}
	for typ, ms := range methods {
		for _, m := range ms {
			if !portMethods[m] {
				assert.True(t, named(m), "docs/sdk/testing.md does not name %s.%s of the kit", typ, m)
			}
		}
	}
}

// TestTheMocksDocNamesEveryMock: the package comment of mocks names every
// mock it holds (go doc ./mocks is where a user looks for them).
func TestTheMocksDocNamesEveryMock(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "mocks", "doc.go"))
	require.NoError(t, err)
	funcs, _ := exported(t, filepath.Join(root, "mocks"))
	n := 0
	for _, f := range funcs {
		if name, ok := strings.CutPrefix(f, "NewMock"); ok {
			n++
			assert.Contains(t, string(doc), "Mock"+name, "mocks/doc.go does not name Mock%s", name)
		}
	}
	assert.NotZero(t, n, "mocks holds mocks")
}
