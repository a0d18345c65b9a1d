package kind

import (
	"fmt"
	"strings"
)

// Block is a block strategy: what happens when a run of a job arrives while
// an earlier run of the same job still runs on the same target. The values
// are XXL-JOB's enum names, sent as they are in the executor protocol.
type Block string

// Block strategies.
const (
	BlockSerial       Block = "SERIAL_EXECUTION" // queue behind the running run (the default)
	BlockDiscardLater Block = "DISCARD_LATER"    // reject the new run
	BlockCoverEarly   Block = "COVER_EARLY"      // kill the running run, start the new one
)

// Blocks lists the block strategies.
var Blocks = []Block{BlockSerial, BlockDiscardLater, BlockCoverEarly}

// Valid reports whether b is a known block strategy.
func (b Block) Valid() bool {
	return b == BlockSerial || b == BlockDiscardLater || b == BlockCoverEarly
}

// ParseBlock maps a block strategy name (case and surrounding spaces
// ignored) to its Block; "" is the default, BlockSerial.
func ParseBlock(name string) (Block, error) {
	n := strings.TrimSpace(name)
	if n == "" {
		return BlockSerial, nil
	}
	b := Block(strings.ToUpper(n))
	if b.Valid() {
		return b, nil
	}
	return "", fmt.Errorf("unknown block strategy %q: use one of %s", name, Join(Blocks))
}
