package cluster

import (
	"fmt"
	"syscall"
)

// PauseEtcd stops etcd with SIGSTOP, as a hung disk or a stalled member would: connections
// stay open and nothing answers. ResumeEtcd lets it go on.
func (cp *ControlPlane) PauseEtcd() error { return cp.signalEtcd(syscall.SIGSTOP) }

// ResumeEtcd undoes PauseEtcd.
func (cp *ControlPlane) ResumeEtcd() error { return cp.signalEtcd(syscall.SIGCONT) }

func (cp *ControlPlane) signalEtcd(sig syscall.Signal) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.etcd == nil {
		return fmt.Errorf("etcd is not running")
	}
	return syscall.Kill(cp.etcd.pid(), sig)
}
