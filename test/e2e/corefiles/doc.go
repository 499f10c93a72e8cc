// Package corefiles renders the stock Corefiles of test/e2e/testdata/corefiles for the suite: it
// fills in the suite's addresses and the nsguard line(s) under test, and changes nothing else.
package corefiles
