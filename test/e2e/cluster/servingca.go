package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// APIServerPort is kube-apiserver's secure port on 127.0.0.1.
func (cp *ControlPlane) APIServerPort() int { return cp.apiPort }

// ServingCA returns the bundle a pod trusts as its ca.crt: kube-apiserver's self-signed
// serving certificate from --cert-dir, which holds the certificate and the CA that signed it.
// The apiserver names its advertise and bind addresses (127.0.0.1) among the certificate's
// IP SANs; ServingCA checks that a client verifying 127.0.0.1 with this bundle, as client-go's
// in-cluster configuration does, really gets through.
func (cp *ControlPlane) ServingCA() ([]byte, error) {
	path := filepath.Join(cp.workDir, "certs", "apiserver.crt")
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no certificate", path)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(cp.host, strconv.Itoa(cp.apiPort)), &tls.Config{RootCAs: pool, ServerName: cp.host})
	if err != nil {
		return nil, fmt.Errorf("the serving certificate in %s does not verify for %s: %w", path, cp.host, err)
	}
	conn.Close()
	return pem, nil
}
