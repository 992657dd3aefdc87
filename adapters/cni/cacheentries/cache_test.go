package cacheentries_test

// libcniEntry is libcni's cachedInfo, in its field order (libcni/api.go).
type libcniEntry struct {
	Kind        string      `json:"kind"`
	ContainerID string      `json:"containerId"`
	Config      []byte      `json:"config"`
	IfName      string      `json:"ifName"`
	NetworkName string      `json:"networkName"`
	NetNS       string      `json:"netns,omitempty"`
	CniArgs     [][2]string `json:"cniArgs,omitempty"`
	Result      any         `json:"result,omitempty"`
}
