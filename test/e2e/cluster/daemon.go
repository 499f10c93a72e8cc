package cluster

import "time"

// Daemon is a child started with StartDaemon: in its own process group, logging to a file,
// killed by the kernel if the test binary dies, and by KillAll and the signal handler with
// the control plane's own processes, so that the node's daemons need no registry of their own.
type Daemon struct{ p *process }

// StartDaemon starts bin with args, its output appended to logPath.
func StartDaemon(name, bin, logPath string, args ...string) (*Daemon, error) {
	p, err := startProcess(name, bin, logPath, args...)
	if err != nil {
		return nil, err
	}
	return &Daemon{p}, nil
}

// PID is the daemon's process ID.
func (d *Daemon) PID() int { return d.p.pid() }

// Exited reports whether the daemon has ended, and how.
func (d *Daemon) Exited() (bool, error) { return d.p.exited() }

// Stop sends SIGTERM, then SIGKILL after grace, and returns once it is reaped. Safe on nil
// and more than once.
func (d *Daemon) Stop(grace time.Duration) {
	if d != nil {
		d.p.stop(grace)
	}
}
