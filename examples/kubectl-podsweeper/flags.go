package main

import (
	"fmt"
	"net"
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
	args = expandArgs(args, ctr.Env)
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
			switch {
			case v == program.Off:
				port = portOff
			case port == "": // an address without a port, or of a variable the plugin cannot read: said as it is
				port = v
			}
		}
		if v, ok := flags["dry-run"]; ok {
			dryRun, _ = strconv.ParseBool(v)
		}
	}
	return port, dryRun
}

// expandArgs expands the variable references $(NAME) of args with the
// container's environment as the kubelet does before the program starts:
// a variable of a literal value defined in env replaces its reference
// (each sees those defined before it), "$$" is a "$", and any other
// reference is left as it is (one whose value comes from elsewhere,
// valueFrom, which the plugin cannot read).
func expandArgs(args []string, env []corev1.EnvVar) []string {
	vars := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			vars[e.Name] = expand(e.Value, vars)
		}
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expand(a, vars)
	}
	return out
}

// expand expands the references of s with vars (expandArgs).
func expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := vars[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// portOff is statusPort's port of a listener turned off (--status-bind-address=0).
const portOff = "off"

// statusPortNumber returns the port number of a program's
// --status-bind-address port (statusPort), or why it cannot be asked on
// it: its listener off, a reference to a variable the plugin cannot read,
// or a port that is no number nor a service name known here.
func statusPortNumber(port string) (int, string) {
	switch {
	case port == portOff:
		return 0, "its status listener is off (--status-bind-address=0)"
	case port == "":
		return 0, `its --status-bind-address has no port: ""`
	case strings.Contains(port, "$("):
		return 0, fmt.Sprintf("its --status-bind-address's port %q comes from a variable whose value the plugin cannot read (valueFrom)", port)
	}
	if n, err := strconv.Atoi(port); err == nil {
		return n, ""
	}
	if n, err := net.LookupPort("tcp", port); err == nil {
		return n, ""
	}
	return 0, fmt.Sprintf("its --status-bind-address has no port: %q", port)
}
