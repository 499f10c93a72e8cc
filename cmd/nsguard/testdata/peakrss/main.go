// Command peakrss runs a command and prints its peak RSS in bytes on stderr's last line.
// A process started straight from a test inherits the test's own peak into its
// ru_maxrss (the exec records the parent's high-water mark), so the tests that measure
// the CLI start it through this small process instead.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	fmt.Fprintf(os.Stderr, "\npeak-rss %d\n", cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10) // KiB on Linux
	os.Exit(cmd.ProcessState.ExitCode())
}
