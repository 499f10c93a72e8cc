package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nsguard webhook checks its flags before it starts, and names the bad one.
func TestWebhookFlags(t *testing.T) {
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for _, f := range []string{crt, key} {
		if err := os.WriteFile(f, []byte("not PEM"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tls := []string{"--tls-cert-file", crt, "--tls-private-key-file", key}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{"no certificate", []string{"webhook", "--kubeconfig", kubeconfig}, "--tls-cert-file and --tls-private-key-file are required"},
		{"no key", []string{"webhook", "--kubeconfig", kubeconfig, "--tls-cert-file", crt}, "--tls-private-key-file are required"},
		{"port 0", append([]string{"webhook", "--kubeconfig", kubeconfig, "--secure-port", "0"}, tls...), "--secure-port 0: want 1 to 65535"},
		{"port not a number", append([]string{"webhook", "--secure-port", "https"}, tls...), `"https" for "--secure-port"`},
		{"bad zone", append([]string{"webhook", "--zone", "cluster..local"}, tls...), `--zone "cluster..local": empty label`},
		{"bad allowed namespace", append([]string{"webhook", "--allow-namespace", "my-app,My_App"}, tls...), `--allow-namespace "My_App": not a namespace name`},
		{"negative delay", append([]string{"webhook", "--shutdown-delay-duration", "-1s"}, tls...), "--shutdown-delay-duration -1s: want 0 or more"},
		{"stray argument", append([]string{"webhook", "serve"}, tls...), `webhook takes no arguments, got "serve"`},
		{"missing kubeconfig", append([]string{"webhook", "--kubeconfig", filepath.Join(dir, "none")}, tls...), "--kubeconfig " + filepath.Join(dir, "none")},
		{"not in a Pod", tls, "not in a Pod"},
		{"a certificate that is no PEM", append([]string{"webhook", "--kubeconfig", kubeconfig}, tls...), "--tls-cert-file " + crt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.name == "not in a Pod" {
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
				args = append([]string{"webhook"}, tls...)
			}
			code, _, errs := runCLI("", args...)
			if code == 0 || !strings.Contains(errs, tt.err) {
				t.Errorf("exit %d, stderr %q, want it to hold %q", code, errs, tt.err)
			}
		})
	}
	code, out, _ := runCLI("", "webhook", "-h")
	if code != 0 || !strings.Contains(out, "--tls-private-key-file") || !strings.Contains(out, "failurePolicy Ignore") {
		t.Errorf("webhook -h: exit %d\n%s", code, out)
	}
}
