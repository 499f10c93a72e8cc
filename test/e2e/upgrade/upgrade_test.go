// Package upgrade checks deploy/ against what `kubeadm upgrade` does to cluster DNS: it reads
// the CoreDNS version from the Deployment's image tag and migrates the Corefile with
// github.com/coredns/corefile-migration, the library kubeadm itself links.
package upgrade

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/corefile-migration/migration"
	"github.com/coredns/corefile-migration/migration/corefile"
	yamlv3 "go.yaml.in/yaml/v3"
	"golang.org/x/mod/modfile"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// root is the repository root, from this package's directory.
const root = "../../.."

// coreDNSVersion is the CoreDNS module cmd/coredns is built from, as go.mod requires it.
func coreDNSVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == "github.com/coredns/coredns" {
			return r.Mod.Version
		}
	}
	t.Fatal("go.mod does not require github.com/coredns/coredns")
	return ""
}

// kubeadmVersion is how kubeadm reads a CoreDNS Deployment's version: what follows the image's
// last colon, without a leading v (cmd/kubeadm/app/phases/addons/dns, DeployedDNSAddon and
// its callers).
func kubeadmVersion(image string) string {
	return strings.TrimLeft(image[strings.LastIndex(image, ":")+1:], "v")
}

// image is where deploy/ names the nsguard image.
type image struct {
	file, name, tag string
}

// images returns the nsguard image of every kustomization and of the Helm values.
func images(t *testing.T) []image {
	t.Helper()
	var out []image
	for _, k := range []string{"deploy/kubernetes/kustomization.yaml", "deploy/kubernetes-nodelocal/kustomization.yaml"} {
		var kz struct {
			Images []struct{ Name, NewName, NewTag string }
		}
		readYAML(t, k, &kz)
		for _, i := range kz.Images {
			if i.Name == "registry.k8s.io/coredns/coredns" {
				out = append(out, image{file: k, name: i.NewName, tag: i.NewTag})
			}
		}
	}
	var values struct {
		Image struct{ Repository, Tag string }
	}
	readYAML(t, "deploy/helm/values-nsguard.yaml", &values)
	out = append(out, image{file: "deploy/helm/values-nsguard.yaml", name: values.Image.Repository, tag: values.Image.Tag})
	if len(out) != 3 {
		t.Fatalf("found %d nsguard images in deploy/, want 3: %+v", len(out), out)
	}
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestImageTagIsTheCoreDNSVersion: kubeadm upgrade reads the running CoreDNS version from the
// image tag, and refuses one corefile-migration does not know (kubernetes/kubernetes#84326).
// So the tag is exactly the CoreDNS version the image is built from, and the image is named
// coredns, so that ClusterConfiguration's dns.imageRepository and dns.imageTag can name it
// (kubeadm appends /coredns to dns.imageRepository).
func TestImageTagIsTheCoreDNSVersion(t *testing.T) {
	want := coreDNSVersion(t)
	known := migration.ValidVersions()
	for _, im := range images(t) {
		if im.tag != want {
			t.Errorf("%s: tag %q, want %q, the CoreDNS version go.mod builds", im.file, im.tag, want)
		}
		if v := kubeadmVersion(im.name + ":" + im.tag); !slices.Contains(known, v) {
			t.Errorf("%s: kubeadm reads version %q from %s:%s; corefile-migration knows none such (newest: %v)", im.file, v, im.name, im.tag, known[len(known)-3:])
		}
		if filepath.Base(im.name) != "coredns" {
			t.Errorf("%s: image %q: kubeadm's dns.imageRepository names REPO/coredns, so the image must be named coredns", im.file, im.name)
		}
	}
}

// TestMigrationKeepsNSGuard migrates every nsguard Corefile in deploy/ with corefile-migration,
// as kubeadm upgrade does, and checks that the nsguard block comes out as it went in, in the
// same server block. The steps: from the tag to each later CoreDNS version the library knows,
// and the step into the tag from the version before it, which runs the same code over the
// same plugins (the only step there is while the tag is the newest version it knows).
func TestMigrationKeepsNSGuard(t *testing.T) {
	tag := strings.TrimLeft(coreDNSVersion(t), "v")
	known := migration.ValidVersions()
	i := slices.Index(known, tag)
	if i < 0 {
		t.Fatalf("corefile-migration does not know CoreDNS %s: %v", tag, known)
	}
	if i == 0 {
		t.Fatalf("corefile-migration knows no CoreDNS before %s", tag)
	}
	steps := [][2]string{{known[i-1], tag}}
	for _, next := range known[i+1:] {
		steps = append(steps, [2]string{tag, next})
	}
	if len(steps) == 1 {
		t.Logf("corefile-migration knows no CoreDNS after %s: only the step %s -> %s", tag, known[i-1], tag)
	}
	corefiles := nsguardCorefiles(t)
	if len(corefiles) < 5 {
		t.Fatalf("found %d nsguard Corefiles in deploy/, want at least 5: %v", len(corefiles), slices.Collect(maps.Keys(corefiles)))
	}
	for name, src := range corefiles {
		before := guardBlocks(t, name, src)
		for _, s := range steps {
			for _, deprecations := range []bool{false, true} {
				out, err := migration.Migrate(s[0], s[1], src, deprecations)
				if err != nil {
					t.Errorf("%s: Migrate %s -> %s: %v", name, s[0], s[1], err)
					continue
				}
				if after := guardBlocks(t, name, out); !reflect.DeepEqual(after, before) {
					t.Errorf("%s: Migrate %s -> %s (deprecations %v) changed nsguard:\n before %s\n after  %s\nCorefile:\n%s",
						name, s[0], s[1], deprecations, show(before), show(after), out)
				}
			}
			// What kubeadm's CoreDNSUnsupportedPlugins preflight check lists: nsguard, and in
			// kubeadm's own ConfigMap (coredns) nothing else. The runbook tells what to do about it.
			notices, err := migration.Unsupported(s[0], s[1], src)
			if err != nil {
				t.Fatalf("%s: Unsupported %s -> %s: %v", name, s[0], s[1], err)
			}
			var listed []string
			for _, n := range notices {
				listed = append(listed, n.Plugin+"/"+n.Option)
			}
			slices.Sort(listed)
			listed = slices.Compact(listed)
			if !slices.Contains(listed, "nsguard/") || strings.HasSuffix(name, " coredns") && len(listed) != 1 {
				t.Errorf("%s: %s -> %s: the unsupported plugins kubeadm lists are %v, want nsguard (alone in kubeadm's ConfigMap)", name, s[0], s[1], listed)
			}
		}
	}
}

// guarded is one nsguard directive and the server block it sits in.
type guarded struct {
	Server []string
	Plugin *corefile.Plugin
}

// guardBlocks parses src with corefile-migration's own parser and returns its nsguard blocks.
func guardBlocks(t *testing.T, name, src string) []guarded {
	t.Helper()
	cf, err := corefile.New(src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []guarded
	for _, s := range cf.Servers {
		for _, p := range s.Plugins {
			if p.Name == "nsguard" {
				out = append(out, guarded{Server: s.DomPorts, Plugin: p})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no nsguard block in:\n%s", name, src)
	}
	return out
}

func show(g []guarded) string {
	var b strings.Builder
	for _, x := range g {
		b.WriteString(strings.Join(x.Server, " ") + " { " + strings.TrimSpace(x.Plugin.ToString()) + " } ")
	}
	return b.String()
}

// nsguardCorefiles returns the Corefile of every ConfigMap in deploy/ that runs nsguard, by
// file and ConfigMap name.
func nsguardCorefiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yamlv3.NewDecoder(bytes.NewReader(b))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return err
			}
			if doc["kind"] != "ConfigMap" {
				continue
			}
			j, err := yaml.Marshal(doc)
			if err != nil {
				return err
			}
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal(j, &cm); err != nil {
				return err
			}
			if c := cm.Data["Corefile"]; strings.Contains(c, "nsguard") {
				rel, _ := filepath.Rel(root, path)
				out[rel+" "+cm.Name] = c
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
