package main

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/program"
)

// boolFlags are the bool flags of each program: those the flag package
// takes without a value ("--dry-run"), and whose next argument is then not
// theirs. TestBoolFlagsAreThePrograms holds them to the programs' own flag
// sets (the plugin cannot import them: they are commands, and cni-gc
// builds for Linux only).
var boolFlags = map[string][]string{
	"node-agent": {"all-pods", "destroy-dead-sandboxes", "destroy-terminated", "dry-run", "metrics-secure",
		"slim-pod-cache", "zap-devel"},
	"cluster-controller": {"dry-run", "events", "leader-elect", "metrics-secure", "slim-pod-cache", "zap-devel"},
	"cni-gc":             {"dry-run", "metrics-secure", "zap-devel"},
}

// commandLineFlags reads the flags of a program's container as the
// program's flag package does (Go's flag package): "--name=value",
// "--name value", "-name=value" and "-name value", a bool flag alone or
// with "=value"; it stops at the first argument that is not a flag, and
// after "--". The last value of a flag wins. The command line is the
// container's command less its first word (the program) and its args, or
// its args alone when it gives no command (the image's entrypoint is the
// program).
func commandLineFlags(prog string, ctr corev1.Container) map[string]string {
	args := ctr.Args
	if len(ctr.Command) > 0 {
		args = append(append([]string{}, ctr.Command[1:]...), ctr.Args...)
	}
	isBool := map[string]bool{}
	for _, name := range boolFlags[prog] {
		isBool[name] = true
	}
	flags := map[string]string{}
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' {
			break
		}
		args = args[1:]
		name := a[1:]
		if name[0] == '-' {
			name = name[1:]
			if name == "" { // "--": the flags end
				break
			}
		}
		if name[0] == '-' || name[0] == '=' {
			break // bad flag syntax: the flag package refuses it
		}
		name, value, hasValue := strings.Cut(name, "=")
		switch {
		case isBool[name] && !hasValue:
			value = "true"
		case !hasValue && len(args) == 0:
			return flags // a flag without its value: the flag package refuses it
		case !hasValue:
			value, args = args[0], args[1:]
		}
		flags[name] = value
	}
	return flags
}

// statusPort reads the program's containers' command lines: the port of
// its --status-bind-address ("" when "0") and whether it runs with
// --dry-run.
func statusPort(prog string, p corev1.Pod) (port string, dryRun bool) {
	port = defaultStatusPorts[prog]
	for _, ctr := range p.Spec.Containers {
		flags := commandLineFlags(prog, ctr)
		if v, ok := flags["status-bind-address"]; ok {
			port = portOf(v)
			if v == program.Off {
				port = ""
			}
		}
		if v, ok := flags["dry-run"]; ok {
			dryRun, _ = strconv.ParseBool(v)
		}
	}
	return port, dryRun
}
