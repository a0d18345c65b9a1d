package hostinfo

import "testing"

func TestCPUModelReadsTheFirstProcessor(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n\nprocessor\t: 1\nmodel name\t: Other\n"
	if got := cpuModel(in); got != "Intel(R) Xeon(R) Processor" {
		t.Fatalf("cpuModel = %q", got)
	}
	if got := cpuModel("processor\t: 0\n"); got != "" {
		t.Fatalf("cpuModel without a model line = %q, want empty", got)
	}
}
