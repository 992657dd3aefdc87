// Command chained is a CNI plugin for cni-gc's tests, chained after the
// bridge plugin: ADD passes the previous result on, as a chained plugin
// does, and DEL does nothing, unless a file beside the binary says
// otherwise: fail-add makes ADD fail (after the bridge and host-local
// succeeded: containerd#12130), fail-del makes DEL fail (only for the
// container IDs it lists, one a line, unless it is empty), slow-add makes
// ADD take 2 s more (host-local has reserved the address, libcni has cached
// nothing of the network yet, and containerd lists no sandbox). Each call
// is appended to calls.log beside it.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	dir := filepath.Dir(os.Args[0])
	cmd := os.Getenv("CNI_COMMAND")
	if f, err := os.OpenFile(filepath.Join(dir, "calls.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%s %s %s netns=%s\n", cmd, os.Getenv("CNI_CONTAINERID"), os.Getenv("CNI_IFNAME"), os.Getenv("CNI_NETNS"))
		f.Close()
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err.Error())
	}
	var conf struct {
		CNIVersion string          `json:"cniVersion"`
		PrevResult json.RawMessage `json:"prevResult"`
	}
	if err := json.Unmarshal(in, &conf); err != nil {
		fail(err.Error())
	}
	switch cmd {
	case "ADD":
		if exists(filepath.Join(dir, "fail-add")) {
			fail("ADD fails on purpose")
		}
		if exists(filepath.Join(dir, "slow-add")) {
			time.Sleep(2 * time.Second)
		}
		if len(conf.PrevResult) == 0 {
			fail("no prevResult: chain me after a plugin that returns one")
		}
		os.Stdout.Write(conf.PrevResult)
	case "DEL":
		if ids, err := os.ReadFile(filepath.Join(dir, "fail-del")); err == nil &&
			(len(bytes.TrimSpace(ids)) == 0 || slices.Contains(strings.Fields(string(ids)), os.Getenv("CNI_CONTAINERID"))) {
			fail("DEL fails on purpose")
		}
	case "VERSION":
		fmt.Print(`{"cniVersion":"1.1.0","supportedVersions":["0.4.0","1.0.0","1.1.0"]}`)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func fail(msg string) {
	fmt.Printf(`{"cniVersion":"1.1.0","code":999,"msg":%q}`, msg)
	os.Exit(1)
}
