package podnet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// checkIP fails unless the ip command is there and we may change the network.
func checkIP() error {
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("ip not found: apt-get install iproute2")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("podnet needs root: it adds network namespaces, links, routes and addresses")
	}
	return nil
}

// runIP runs the ip command and returns its standard output.
func runIP(args ...string) ([]byte, error) {
	cmd := exec.Command("ip", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// ipJSON runs ip -j and decodes its output into v. No output decodes as nothing: ip netns
// list prints nothing at all before the first namespace exists.
func ipJSON(v any, args ...string) error {
	out, err := runIP(append([]string{"-j"}, args...)...)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	return json.Unmarshal(out, v)
}
