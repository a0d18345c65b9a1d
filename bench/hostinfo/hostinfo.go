// Package hostinfo reads what the benchmarks record of the machine they ran
// on. Figures from two machines only compare when their CPUs are the same
// model, so every result line names it.
package hostinfo

import (
	"os"
	"strings"
)

// Kernel is the running kernel's release, or "" when it cannot be read.
func Kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// CPUModel is the first processor's model name from /proc/cpuinfo, or ""
// when it cannot be read.
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return cpuModel(string(b))
}

func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
