//go:build e2e

package e2e

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

var deleteNow = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
