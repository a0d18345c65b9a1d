package logs

import (
	"bytes"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

func TestOrDiscardKeepsAGivenLoggerAndSilencesNil(t *testing.T) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	given := logrus.NewEntry(l)
	require.Same(t, given, OrDiscard(given))
	OrDiscard(given).Warn("kept")
	require.Contains(t, buf.String(), "kept")

	d := OrDiscard(nil)
	require.NotNil(t, d)
	require.False(t, d.Logger.IsLevelEnabled(logrus.ErrorLevel), "a nil logger must log nothing")
	d.Error("dropped") // must not panic
}
