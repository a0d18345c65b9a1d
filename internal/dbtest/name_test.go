package dbtest

import (
	"regexp"
	"strings"
	"testing"
)

func TestDBName(t *testing.T) {
	t.Parallel()
	const sfx = "0123456789ab"
	tests := []struct {
		name     string
		testName string
		want     string
	}{
		{"lower cases a plain name", "TestStore", "ringjob_test_teststore_" + sfx},
		{"turns subtest slashes and spaces into one underscore", "TestStore/run insert//batch", "ringjob_test_teststore_run_insert_batch_" + sfx},
		{"drops leading and trailing punctuation", "__Test-x!!", "ringjob_test_test_x_" + sfx},
		{"drops characters outside a-z0-9", "TestÜber#01/ä", "ringjob_test_test_ber_01_" + sfx},
		{"leaves out an empty name", "", "ringjob_test_" + sfx},
		{"leaves out a name of punctuation only", "/#/", "ringjob_test_" + sfx},
		{"cuts a long name to 64 characters", strings.Repeat("Abcdefghij", 10), "ringjob_test_" + strings.Repeat("abcdefghij", 3) + "abcdefgh_" + sfx},
		{"does not end the cut name with an underscore", strings.Repeat("a", 37) + "/bcd", "ringjob_test_" + strings.Repeat("a", 37) + "_" + sfx},
	}
	valid := regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := dbName(tt.testName, sfx)
			if got != tt.want {
				t.Errorf("dbName(%q) = %q, want %q", tt.testName, got, tt.want)
			}
			if !valid.MatchString(got) {
				t.Errorf("dbName(%q) = %q, want only [a-z0-9_] and at most 64 characters", tt.testName, got)
			}
		})
	}
}
