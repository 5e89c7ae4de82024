// runc-capfilter is installed as Docker's default runtime only on hosts whose
// capability bounding set lacks CAP_SYS_RESOURCE. Docker 20.10 asks runc for every
// capability the kernel knows when a container is privileged, and runc then fails with
// "unable to apply caps". This shim removes the capabilities the host cannot grant from
// the OCI bundle (docker run) or process spec (docker exec) and then runs the real runc
// with the arguments unchanged.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"
)

const realRunc = "/usr/sbin/runc"

var dropped = map[string]bool{"CAP_SYS_RESOURCE": true}

func filterCaps(caps map[string]any) {
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			if s, _ := c.(string); !dropped[s] {
				kept = append(kept, c)
			}
		}
		caps[set] = kept
	}
}

// rewrite edits the JSON file in place; process is the object holding "capabilities".
func rewrite(path string, process func(doc map[string]any) map[string]any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	if p := process(doc); p != nil {
		if caps, ok := p["capabilities"].(map[string]any); ok {
			filterCaps(caps)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

func main() {
	args := os.Args[1:]
	for i := 0; i+1 < len(args); i++ {
		var err error
		switch args[i] {
		case "--bundle", "-b":
			err = rewrite(args[i+1]+"/config.json", func(d map[string]any) map[string]any {
				p, _ := d["process"].(map[string]any)
				return p
			})
		case "--process", "-p":
			err = rewrite(args[i+1], func(d map[string]any) map[string]any { return d })
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "runc-capfilter: %v\n", err)
			os.Exit(1)
		}
	}
	argv := append([]string{realRunc}, args...)
	if err := syscall.Exec(realRunc, argv, os.Environ()); err != nil {
		fmt.Fprintf(os.Stderr, "runc-capfilter: exec %s: %v\n", realRunc, err)
		os.Exit(1)
	}
}
