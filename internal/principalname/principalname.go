// Package principalname is the one rule by which the names of users and
// service accounts are compared: Unicode NFKC, then case folding. "Alice",
// "ALICE" and fullwidth "ａｌｉｃｅ" are one name; so are "ǅ" and "Ǆ".
//
// The rule lives in this small package, not in auth/identity, because two
// parties apply it: the store writes the key of every name it stores (and
// its upgrade computes the key of every existing one), and the identity
// service folds the names it looks up and throttles. The store cannot import
// the identity service; both import this.
package principalname

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxKeyChars is the longest key stored as it is; a longer one (NFKC can
// expand a character into many) is stored as its hash.
const MaxKeyChars = 255

// Fold is the name in the form in which names are compared: NFKC, then
// case-folded.
func Fold(name string) string { return cases.Fold().String(norm.NFKC.String(name)) }

// Key is what the store keeps and indexes (unique) for a name: Fold(name),
// or "sha256:" and the hex SHA-256 of it when it is longer than MaxKeyChars
// characters. Two names are the same name exactly when their keys are equal.
func Key(name string) string {
	f := Fold(name)
	if utf8.RuneCountInString(f) <= MaxKeyChars {
		return f
	}
	sum := sha256.Sum256([]byte(f))
	return "sha256:" + hex.EncodeToString(sum[:])
}
