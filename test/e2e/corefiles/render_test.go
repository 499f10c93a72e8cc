package corefiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var addrs = Addrs{
	Listen:  []string{"10.53.0.10"},
	Metrics: "127.0.0.1:9001", Health: "127.0.0.1:9002", Ready: "127.0.0.1:9003",
	ConfigDir: "/tmp/cfg", ClusterDNS: "10.53.0.20", Upstream: "10.53.0.2",
}

const refuse = "nsguard {\n    mode refuse\n    allow client kube-system\n}"

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "corefiles", name+".Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRenderKubeadm(t *testing.T) {
	got, err := Render(fixture(t, "kubeadm"), addrs, refuse)
	if err != nil {
		t.Fatal(err)
	}
	want := `.:53 {
    bind 10.53.0.10
    errors
    health 127.0.0.1:9002 {
       lameduck 5s
    }
    ready 127.0.0.1:9003
    nsguard {
        mode refuse
        allow client kube-system
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus 127.0.0.1:9001
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRenderNodeLocal(t *testing.T) {
	a := addrs
	a.Listen = []string{"169.254.20.10", "10.53.0.10"}
	got, err := Render(fixture(t, "nodelocaldns"), a, "nsguard")
	if err != nil {
		t.Fatal(err)
	}
	want := `cluster.local:53 {
    nsguard
    errors
    cache {
            success 9984 30
            denial 9984 5
    }
    reload
    loop
    bind 169.254.20.10 10.53.0.10
    forward . 10.53.0.20 {
            force_tcp
    }
    prometheus 127.0.0.1:9001
    health 127.0.0.1:9002
    }
in-addr.arpa:53 {
    errors
    cache 30
    reload
    loop
    bind 169.254.20.10 10.53.0.10
    forward . 10.53.0.20 {
            force_tcp
    }
    prometheus 127.0.0.1:9001
    }
ip6.arpa:53 {
    errors
    cache 30
    reload
    loop
    bind 169.254.20.10 10.53.0.10
    forward . 10.53.0.20 {
            force_tcp
    }
    prometheus 127.0.0.1:9001
    }
.:53 {
    errors
    cache 30
    reload
    loop
    bind 169.254.20.10 10.53.0.10
    forward . 10.53.0.2
    prometheus 127.0.0.1:9001
    }
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Every stock Corefile renders; each line is the source's, or one the renderer owns.
func TestRenderChangesOnlyAddresses(t *testing.T) {
	for _, name := range []string{"kubeadm", "kubeadm-pre-v1.32", "coredns-helm", "k3s-rendered", "rke2-coredns", "coredns-deployment", "eks", "aks", "nodelocaldns"} {
		t.Run(name, func(t *testing.T) {
			src := fixture(t, name)
			got, err := Render(src, addrs, "nsguard")
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(got, "\n    nsguard\n"); n != 1 {
				t.Errorf("%d nsguard lines", n)
			}
			if !strings.Contains(got, "bind 10.53.0.10") {
				t.Error("no bind")
			}
			if strings.Contains(src, "forward . /etc/resolv.conf") && !strings.Contains(got, "forward . /etc/resolv.conf") {
				t.Error("forward . /etc/resolv.conf was changed")
			}
			if strings.Contains(src, "lameduck") && !strings.Contains(got, "lameduck") {
				t.Error("health lost its lameduck")
			}
			srcLines := map[string]bool{}
			for _, l := range strings.Split(src, "\n") {
				srcLines[l] = true
			}
			for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if srcLines[l] {
					continue
				}
				owned := false
				for _, p := range []string{"bind ", "nsguard", "prometheus 127.0.0.1:", "health 127.0.0.1:", "ready 127.0.0.1:", "hosts /tmp/cfg/", "import /tmp/cfg/", "forward . 10.53.0.", "cluster.local:53 {"} {
					owned = owned || strings.HasPrefix(strings.TrimSpace(l), p)
				}
				if !owned {
					t.Errorf("line %q is neither the source's nor the renderer's", l)
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	if _, err := Render(".:53 {\n    forward . 1.2.3.4\n}\n", addrs, "nsguard"); err == nil {
		t.Error("nsguard placed in a Corefile without kubernetes or cluster.local")
	}
	if _, err := Render(".:53 {\n    ready\n}\n", Addrs{Listen: []string{"10.53.0.10"}}, ""); err == nil {
		t.Error("ready rendered without an address")
	}
	if _, err := Render(".:53 {\n", addrs, ""); err == nil {
		t.Error("unbalanced braces accepted")
	}
}

func TestTokens(t *testing.T) {
	got := tokens(`      match "^(?:[^.]+\.){4,}internal\.cloudapp\.net\.$" # comment {`)
	if len(got) != 2 || got[0] != "match" || !strings.HasSuffix(got[1], `$"`) {
		t.Errorf("tokens: %q", got)
	}
}
