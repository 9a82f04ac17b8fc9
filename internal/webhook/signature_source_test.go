package webhook_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// Verify must compare the MAC in constant time. No behavioural test can tell
// hmac.Equal from ==: both accept the right MAC and refuse a wrong one; only
// the time a refusal takes differs, and it leaks how many leading bytes of a
// forged MAC were right. So this test reads the source of Verify instead: the
// value computed by mac() is compared with hmac.Equal, and nothing in Verify
// compares it, or a signature from the header, with ==, != or a non
// constant-time function (bytes.Equal, bytes.Compare, slices.Equal,
// reflect.DeepEqual, strings.Compare, strings.EqualFold).
func TestVerifyComparesTheMACInConstantTime(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "signature.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var verify *ast.FuncDecl
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Verify" && fn.Recv == nil {
			verify = fn
		}
	}
	if verify == nil {
		t.Fatal("signature.go has no func Verify")
	}

	// The MAC values: what mac(...) returns (the expected MAC), the
	// signatures hex-decoded from the header, the slices they are appended to
	// and the variables ranging over those slices.
	expected, macs := map[string]bool{}, map[string]bool{}
	for changed := true; changed; {
		changed = false
		mark := func(set map[string]bool, e ast.Expr) {
			if id, ok := e.(*ast.Ident); ok && id.Name != "_" && !set[id.Name] {
				set[id.Name], changed = true, true
			}
		}
		ast.Inspect(verify.Body, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				for i, rhs := range s.Rhs {
					call, ok := rhs.(*ast.CallExpr)
					if !ok || i >= len(s.Lhs) {
						continue
					}
					switch {
					case isCall(call, "", "mac"):
						mark(expected, s.Lhs[i])
						mark(macs, s.Lhs[i])
					case isCall(call, "hex", "DecodeString"), isCall(call, "", "append") && mentionsAny(call.Args[1:], macs):
						mark(macs, s.Lhs[i])
					}
				}
			case *ast.RangeStmt:
				if s.Value != nil && mentions(s.X, macs) {
					mark(macs, s.Value)
				}
			}
			return true
		})
	}
	if len(expected) == 0 {
		t.Fatal("Verify does not assign the result of mac(...) to a variable: update this test with the code")
	}

	constantTime := false
	ast.Inspect(verify.Body, func(n ast.Node) bool {
		switch e := n.(type) {
		case *ast.BinaryExpr:
			if (e.Op == token.EQL || e.Op == token.NEQ) && (mentions(e.X, macs) || mentions(e.Y, macs)) {
				t.Errorf("%s: the MAC is compared with %s: use hmac.Equal, which takes the same time whatever the bytes", fset.Position(e.Pos()), e.Op)
			}
		case *ast.CallExpr:
			if isCall(e, "hmac", "Equal") && mentionsAny(e.Args, expected) {
				constantTime = true
			}
			for _, leaky := range [][2]string{{"bytes", "Equal"}, {"bytes", "Compare"}, {"slices", "Equal"},
				{"reflect", "DeepEqual"}, {"strings", "Compare"}, {"strings", "EqualFold"}, {"subtle", "XORBytes"}} {
				if isCall(e, leaky[0], leaky[1]) && mentionsAny(e.Args, macs) {
					t.Errorf("%s: the MAC is compared with %s.%s: use hmac.Equal", fset.Position(e.Pos()), leaky[0], leaky[1])
				}
			}
		}
		return true
	})
	if !constantTime {
		t.Errorf("Verify never passes the expected MAC (%v) to hmac.Equal", expected)
	}
}

// isCall reports whether call calls pkg.name (pkg "": a plain function name).
func isCall(call *ast.CallExpr, pkg, name string) bool {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return pkg == "" && f.Name == name
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		return ok && x.Name == pkg && f.Sel.Name == name
	}
	return false
}

// mentions reports whether expression e uses the value of any of the names
// (their length, len(x) or cap(x), is not their value).
func mentions(e ast.Node, names map[string]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && (isCall(call, "", "len") || isCall(call, "", "cap")) {
			return false
		}
		if id, ok := n.(*ast.Ident); ok && names[id.Name] {
			found = true
		}
		return !found
	})
	return found
}

func mentionsAny(es []ast.Expr, names map[string]bool) bool {
	for _, e := range es {
		if mentions(e, names) {
			return true
		}
	}
	return false
}
