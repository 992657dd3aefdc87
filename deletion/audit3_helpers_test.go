// Package audit_test holds the third audit's tests of the engine's documented promises, through the public API only.
package deletion_test

import (
	"k8s.io/apimachinery/pkg/types"
)

func key3(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
