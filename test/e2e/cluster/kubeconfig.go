package cluster

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig for server and token; the serving
// certificate is self-signed by the apiserver, hence insecure-skip-tls-verify.
func writeKubeconfig(path, server, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["nsguard-e2e"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["nsguard-e2e"] = &clientcmdapi.Context{Cluster: "nsguard-e2e", AuthInfo: "admin"}
	cfg.CurrentContext = "nsguard-e2e"
	return clientcmd.WriteToFile(*cfg, path)
}

func restConfig(server, token string) *rest.Config {
	return &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             100,
		Burst:           200,
		// Deprecation warnings (v1 Endpoints, ...) are noise in test logs.
		WarningHandler: rest.NoWarnings{},
	}
}
