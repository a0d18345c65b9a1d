package dbtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain also proves that nothing dbtest started outlives Wrap's Run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(Wrap(m))
}
