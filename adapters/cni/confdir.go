package cni

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// confExtensions are the file names libcni's runtimes read as network
// configs (containerd and CRI-O: .conf, .conflist and .json).
var confExtensions = []string{".conf", ".conflist", ".json"}

// disableGCNetworks returns the names of the networks whose config in dir
// says "disableGC": true. A directory that does not exist holds none; a
// file that does not parse is not a network the runtime uses, and is
// passed over. A directory that cannot be read is an error: the collector
// cannot know which networks to leave alone.
func disableGCNetworks(dir string) (map[string]bool, error) {
	files, err := libcni.ConfFiles(dir, confExtensions)
	if err != nil {
		return nil, fmt.Errorf("cni: reading the network configs in %s: %w", dir, err)
	}
	keep := map[string]bool{}
	for _, f := range files {
		list, err := libcni.NetworkConfFromFile(filepath.Clean(f))
		if err != nil {
			// A single plugin's .conf, which the runtime loads as a list of one: its own key says.
			if name, ok := singleDisableGC(filepath.Clean(f)); ok {
				keep[name] = true
			}
			continue
		}
		if list.DisableGC {
			keep[list.Name] = true
		}
	}
	return keep, nil
}

// singleDisableGC returns the network of a single plugin's config file f, and whether it says "disableGC": true
// (singleSaysDisableGC).
func singleDisableGC(f string) (string, bool) {
	b, err := os.ReadFile(f)
	if err != nil {
		return "", false
	}
	var raw struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(b, &raw) != nil || raw.Name == "" {
		return "", false
	}
	return raw.Name, singleSaysDisableGC(b)
}

// singleSaysDisableGC reports whether a single plugin's config says "disableGC": true, as libcni reads a list's
// key (a bool, or "true" in any case: "tRuE"), or as strconv.ParseBool reads a string true ("1", "t"): a doubtful
// value keeps the network. The key is read by its exact name, whatever other cases of it say.
func singleSaysDisableGC(conf []byte) bool {
	var raw map[string]json.RawMessage
	if json.Unmarshal(conf, &raw) != nil {
		return false
	}
	v, ok := raw["disableGC"]
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		b, err := strconv.ParseBool(s)
		return strings.EqualFold(s, "true") || err == nil && b
	}
	return false
}
