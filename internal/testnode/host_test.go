package testnode

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Diff names every kind of change a node could make to the host: a
// setting, a watched directory created or written to, a link, a mount.
func TestDiffNamesEveryChange(t *testing.T) {
	before := HostState{
		Settings: map[string]string{"/proc/sys/net/ipv4/ip_forward": "0"},
		Trees:    map[string][]string{"/opt": {"dir skills"}, "/run/mount": nil, "/var/lib/cni": nil},
		Links:    []string{"1: lo: <LOOPBACK,UP>"},
		Mounts:   []string{"/ / ext4 /dev/vda"},
	}
	assert.Empty(t, before.Diff(before), "no change")
	after := HostState{
		Settings: map[string]string{"/proc/sys/net/ipv4/ip_forward": "1"},
		Trees:    map[string][]string{"/opt": {"dir containerd", "dir skills"}, "/run/mount": {"file utab"}, "/var/lib/cni": nil},
		Links:    []string{"1: lo: <LOOPBACK,UP>", "5: cni0: <BROADCAST>"},
		Mounts:   []string{"/ / ext4 /dev/vda", "/ /run/netns/x nsfs nsfs"},
	}
	d := after.Diff(before)
	for _, want := range []string{
		"/proc/sys/net/ipv4/ip_forward: 0 became 1",
		"/opt: + dir containerd",
		"/run/mount was created",
		"/run/mount: + file utab",
		"link + 5: cni0: <BROADCAST>",
		"left mounted: + / /run/netns/x nsfs nsfs",
	} {
		assert.Contains(t, strings.Split(d, "\n"), want)
	}
	assert.NotContains(t, d, "/var/lib/cni", "an absent directory that stays absent")
	assert.Contains(t, before.Diff(after), "/run/mount was removed")
}
