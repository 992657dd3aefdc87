package cacheentries_test

func hostLocalConf(network, dataDir string, extra string) string {
	return `{"cniVersion":"1.0.0","name":"` + network + `"` + extra + `,"plugins":[{"type":"host-local","ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/16"}],[{"subnet":"fd00:88::/64"}]],"dataDir":"` + dataDir + `"}}]}`
}
