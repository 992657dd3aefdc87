package deletion_test

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

func key4(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func pu4(name string) ports.PU { return ports.PU{PUID: "uid-" + name, Pod: key4(name)} }
