// Package logs holds the one rule for a component given no logger: it logs
// nothing. Library code never picks a destination of its own (stderr, the
// standard logger); the server and the tests inject one.
package logs

import (
	"io"

	"github.com/sirupsen/logrus"
)

// Discard returns an entry that writes nothing: for components built
// without a logger, and for tests that do not read the log.
func Discard() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.PanicLevel) // skip formatting what would be thrown away
	return logrus.NewEntry(l)
}

// OrDiscard returns log, or Discard() when log is nil.
func OrDiscard(log *logrus.Entry) *logrus.Entry {
	if log == nil {
		return Discard()
	}
	return log
}
